package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// errTimedOut: the object followed did not reach the state waited for in time.
var errTimedOut = errors.New("timed out")

// follow watches the object name of lw's kind until done says it is finished, printing a
// progress line (as line says it) each time the line changes, with the time since the start.
// Every change the API server sends is seen: the wait is on the watch, never on a timer.
func follow[T runtime.Object](ctx context.Context, env *Env, lw *cache.ListWatch, objType T, name string, timeout time.Duration,
	line func(T) string, done func(T) bool) (T, error) {
	var last T
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start, printed := env.Now(), ""
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, env.Etcd), objType, nil,
		func(ev watch.Event) (bool, error) {
			obj, ok := ev.Object.(T)
			if !ok {
				return false, nil
			}
			if m, err := metaName(obj); err != nil || m != name {
				return false, err
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("%s was deleted", name)
			}
			last = obj
			if l := line(obj); l != printed {
				fmt.Fprintf(env.Out, "%s (%s)\n", l, env.Now().Sub(start).Round(time.Second))
				printed = l
			}
			return done(obj), nil
		})
	if err != nil && (wait.Interrupted(err) || errors.Is(err, context.DeadlineExceeded)) {
		return last, fmt.Errorf("%s: %w after %s", name, errTimedOut, timeout)
	}
	return last, err
}

func metaName(obj runtime.Object) (string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return "", fmt.Errorf("object %T has no metadata", obj)
	}
	return m.GetName(), nil
}

// byName narrows a list or watch to one object.
func byName(name string, o metav1.ListOptions) metav1.ListOptions {
	o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	return o
}
