package operator

import (
	"fmt"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// RouteKlog sends the logs of client-go (leader election, informers, events), which uses
// klog, through log, so that every line has the operator's format and level. klog's verbose
// levels (V(1) and up) become Debug.
func RouteKlog(log *logrus.Entry) {
	klog.SetLogger(logr.New(&klogSink{log: log.WithField("component", "client-go")}))
}

// klogSink is a logr.LogSink writing to logrus.
type klogSink struct {
	log *logrus.Entry
}

var _ logr.LogSink = (*klogSink)(nil)

func (s *klogSink) Init(logr.RuntimeInfo) {}

func (s *klogSink) Enabled(level int) bool {
	if level > 0 {
		return s.log.Logger.IsLevelEnabled(logrus.DebugLevel)
	}
	return s.log.Logger.IsLevelEnabled(logrus.InfoLevel)
}

func (s *klogSink) Info(level int, msg string, kv ...any) {
	e := s.log.WithFields(fields(kv))
	if level > 0 {
		e.Debug(msg)
		return
	}
	e.Info(msg)
}

func (s *klogSink) Error(err error, msg string, kv ...any) {
	s.log.WithFields(fields(kv)).WithError(err).Error(msg)
}

func (s *klogSink) WithValues(kv ...any) logr.LogSink {
	return &klogSink{log: s.log.WithFields(fields(kv))}
}

func (s *klogSink) WithName(name string) logr.LogSink {
	return &klogSink{log: s.log.WithField("logger", name)}
}

// fields turns logr's alternating keys and values into logrus fields.
func fields(kv []any) logrus.Fields {
	f := make(logrus.Fields, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		f[fmt.Sprint(kv[i])] = kv[i+1]
	}
	if len(kv)%2 == 1 {
		f["!BADKEY"] = kv[len(kv)-1]
	}
	return f
}
