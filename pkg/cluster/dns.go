package cluster

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/dnsutil"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// servedPods remembers, per cluster, the pods whose names cluster DNS has answered for. A
// published pod keeps its record as long as it lives, so the question is asked once per pod,
// not once per pass. It only saves questions: a restarted operator asks again.
type servedPods struct {
	mu sync.Mutex
	// byCluster maps namespace/name to the UIDs of the cluster's pods DNS serves.
	byCluster map[string]map[types.UID]bool
}

func (s *servedPods) get(cluster string) map[types.UID]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byCluster[cluster]
}

func (s *servedPods) set(cluster string, uids map[types.UID]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byCluster == nil {
		s.byCluster = map[string]map[types.UID]bool{}
	}
	if len(uids) == 0 {
		delete(s.byCluster, cluster)
		return
	}
	s.byCluster[cluster] = uids
}

// checkDNS keeps in o.published only the pods whose names cluster DNS already serves. The
// EndpointSlices say a record is published; the DNS server watches them too and may see them
// later. The leader dials a member the operator adds at once, by name, and a "no such host"
// from a DNS server that has not caught up is cached for CoreDNS's negative-cache TTL (see
// dnsutil.TrustAfter). So the planner, which adds a member only once its pod is published,
// waits for DNS's own word. (A new pod's member-init, which asks the current members by name,
// waits for DNS itself.) Without a checker (the
// operator runs outside the cluster and cannot ask cluster DNS) the EndpointSlices are
// trusted alone.
func (r *Reconciler) checkDNS(ctx context.Context, c *api.EtcdCluster, o *observation) {
	if r.deps.DNS == nil {
		return
	}
	key := c.Namespace + "/" + c.Name
	known := r.served.get(key)
	served := map[types.UID]bool{}
	var ask []*corev1.Pod
	for _, p := range o.pods {
		switch {
		case !o.published[p.Name]:
		case known[p.UID]:
			served[p.UID] = true
		default:
			ask = append(ask, p)
		}
	}

	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range ask {
		ordinal, _ := member.Ordinal(c.Name, p.Name)
		host := member.Host(c.Name, c.Namespace, ordinal)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer survive(r.log(c), "asking cluster DNS for a member's name")
			pctx, cancel := context.WithTimeout(ctx, dnsutil.DefaultTimeout)
			defer cancel()
			ok, err := r.deps.DNS.Serves(pctx, host)
			log := r.log(c).WithField("member", p.Name)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok:
				served[p.UID] = true
			case time.Since(p.CreationTimestamp.Time) >= dnsutil.TrustAfter:
				served[p.UID] = true
				log.WithError(err).WithField("after", dnsutil.TrustAfter).Warn("cluster DNS does not confirm the member's name; trusting the EndpointSlice")
			default:
				if err != nil {
					log.WithError(err).Debug("asking cluster DNS for the member's name")
				}
				o.published[p.Name] = false
			}
		}()
	}
	wg.Wait()
	r.served.set(key, served)
}
