package plugin

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
)

// newTable writes aligned columns the way kubectl's printers do (the same tabwriter
// settings), flushed by the caller.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 10, 4, 3, ' ', 0)
}

// row writes one line of tab-separated cells.
func row(w io.Writer, cells ...string) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	fmt.Fprintln(w)
}

// bytesIEC is a size in the binary units kubectl and etcd's own messages use: 512B, 2.1MiB,
// 1.8GiB.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// percent is part of whole as a whole percentage, rounded down, so that a member at 99.6% of
// its quota does not read as full.
func percent(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", part*100/whole)
}

// age is how long ago t was, as kubectl's AGE column says it ("5m", "2d3h"); "<unknown>" for
// a zero time, as kubectl prints it.
func age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// orDash is s, or "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
