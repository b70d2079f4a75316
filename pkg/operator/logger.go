package operator

import (
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"
)

// Log formats accepted by NewLogger.
const (
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// NewLogger returns a logger writing to out at level ("debug", "info", ...) in format
// (LogFormatText or LogFormatJSON), with RFC 3339 timestamps in milliseconds.
func NewLogger(level, format string, out io.Writer) (*logrus.Logger, error) {
	lvl, err := logrus.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("parsing --log-level: %w", err)
	}
	log := logrus.New()
	log.SetOutput(out)
	log.SetLevel(lvl)
	const stamp = "2006-01-02T15:04:05.000Z07:00"
	switch format {
	case LogFormatText:
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true, TimestampFormat: stamp, DisableColors: true})
	case LogFormatJSON:
		log.SetFormatter(&logrus.JSONFormatter{TimestampFormat: stamp})
	default:
		return nil, fmt.Errorf("--log-format must be %s or %s, not %q", LogFormatText, LogFormatJSON, format)
	}
	return log, nil
}

// sinceStart is a log field: how long after start something happened.
func sinceStart(start time.Time) logrus.Fields {
	return logrus.Fields{"since_start": time.Since(start).Round(time.Millisecond)}
}
