package render

import "strings"

// LastMessageLine is the last non-empty line of a container's termination message (the
// containers this package renders ask for the log's tail on error), cut to a length fit
// for a condition message.
func LastMessageLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 512 {
		l = l[:512] + "..."
	}
	return l
}
