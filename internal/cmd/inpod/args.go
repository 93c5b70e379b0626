package inpod

import (
	"strconv"
	"time"
)

// ArgList builds a program's arguments as the operator renders them: --name=value, and
// only for a value other than the zero value (the flag's default then applies); a true
// bool is the bare --name.
type ArgList []string

// String adds --name=v unless v is empty.
func (a *ArgList) String(name, v string) {
	if v != "" {
		*a = append(*a, "--"+name+"="+v)
	}
}

// Bool adds --name if v.
func (a *ArgList) Bool(name string, v bool) {
	if v {
		*a = append(*a, "--"+name)
	}
}

// Int64 adds --name=v unless v is 0.
func (a *ArgList) Int64(name string, v int64) {
	if v != 0 {
		*a = append(*a, "--"+name+"="+strconv.FormatInt(v, 10))
	}
}

// Duration adds --name=v (as time.Duration writes it) unless v is 0.
func (a *ArgList) Duration(name string, v time.Duration) {
	if v != 0 {
		*a = append(*a, "--"+name+"="+v.String())
	}
}
