package cluster

import (
	"runtime/debug"

	"github.com/sirupsen/logrus"
)

// survive, deferred first thing in a goroutine a pass starts, turns a panic there into a
// logged failure of that one request (a member that did not answer). pkg/controller recovers a
// panic of the pass itself; one in another goroutine would end the operator, and every
// cluster's loop with it.
func survive(log *logrus.Entry, what string) {
	if r := recover(); r != nil {
		log.WithField("stack", string(debug.Stack())).Errorf("%s panicked: %v", what, r)
	}
}
