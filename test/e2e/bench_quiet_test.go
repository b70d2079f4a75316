//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// quietBound is how long an apply round waits for the previous round's leftovers.
const quietBound = 3 * time.Minute

// waitQuiet waits until the namespaces of earlier rounds are gone and their volumes deleted
// (no PersistentVolume left Released): a round's namespace is deleted without waiting, and its
// terminating pods and the provisioner's helper pods that delete its volumes would otherwise
// share the node's two cores with the next round's apply, which then measures them too.
func waitQuiet(t *testing.T, f *framework.Framework) {
	t.Helper()
	err := framework.Poll(quietBound, func() (bool, error) {
		var namespaces corev1.NamespaceList
		if err := f.GetAPI("/api/v1/namespaces", &namespaces); err != nil {
			return false, err
		}
		var busy []string
		for _, ns := range namespaces.Items {
			if ns.Status.Phase == corev1.NamespaceTerminating {
				busy = append(busy, "namespace "+ns.Name)
			}
		}
		var volumes corev1.PersistentVolumeList
		if err := f.GetAPI("/api/v1/persistentvolumes", &volumes); err != nil {
			return false, err
		}
		for _, pv := range volumes.Items {
			if pv.Status.Phase == corev1.VolumeReleased {
				busy = append(busy, "volume "+pv.Name)
			}
		}
		return len(busy) == 0, fmt.Errorf("still going: %v", busy)
	})
	if err != nil {
		t.Fatalf("the previous rounds' objects did not go within %v: %v", quietBound, err)
	}
}
