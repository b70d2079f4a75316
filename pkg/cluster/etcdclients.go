package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/etcdutil"
)

// etcdClients keeps the etcd clients of each cluster's passes from one pass to the next, so
// that the pass of an idle cluster, which asks the same members the same questions every
// time, dials nothing: the clients keep their connections (etcdutil's client). A client is
// kept under the endpoints it was opened over and how it connects (conns.For): a member pod
// made again (a new IP), a client port moved on or off TLS, or a renewed client certificate
// is another client, and the one it replaces is closed at the end of the pass that no longer
// asked for it (release). Nothing is decided from what is kept: a client is only a way to
// ask, and every pass asks again. Safe for concurrent use; the clients of one cluster are
// used by its own loop only, one pass at a time.
type etcdClients struct {
	factory  etcdutil.Factory
	conns    conns
	recorder PassRecorder

	mu sync.Mutex
	// clusters are the kept clients, by cluster (namespace/name) and by clientKey.
	clusters map[string]map[string]*keptClient
}

// keptClient is a client and whether a call asked for it since the cluster's last release.
type keptClient struct {
	cli  etcdutil.Client
	used bool
}

func newEtcdClients(factory etcdutil.Factory, cs conns, recorder PassRecorder) *etcdClients {
	if recorder == nil {
		recorder = noRecorder{}
	}
	return &etcdClients{factory: factory, conns: cs, recorder: recorder, clusters: map[string]map[string]*keptClient{}}
}

// clientKey names a client by how it connects and by its endpoints, in any order: a
// client balances its calls over its endpoints, whatever their order.
func clientKey(conn connection, endpoints []string) string {
	return conn.id + " " + strings.Join(slices.Sorted(slices.Values(endpoints)), ",")
}

// get is a client over endpoints, members of c: the one kept since an earlier call with the
// same endpoints and connection settings, or a new one. The caller does not close it.
func (k *etcdClients) get(ctx context.Context, c *api.EtcdCluster, endpoints []string) (etcdutil.Client, error) {
	conn, err := k.conns.For(ctx, c, overTLS(endpoints))
	if err != nil {
		return nil, err
	}
	cluster, key := c.Namespace+"/"+c.Name, clientKey(conn, endpoints)
	if cli := k.kept(cluster, key); cli != nil {
		return cli, nil
	}
	cfg, err := conn.config()
	if err != nil {
		return nil, err
	}
	cli, err := k.factory.New(endpoints, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening etcd client: %w", err)
	}
	k.mu.Lock()
	if k.clusters[cluster] == nil {
		k.clusters[cluster] = map[string]*keptClient{}
	}
	old := k.clusters[cluster][key]
	k.clusters[cluster][key] = &keptClient{cli: cli, used: true}
	k.mu.Unlock()
	k.recorder.EtcdClientOpened(c.Namespace, c.Name)
	if old != nil {
		// Only two passes of one cluster at once would get here; closed all the same.
		k.close(c.Namespace, c.Name, []etcdutil.Client{old.cli})
	}
	return cli, nil
}

// kept is the client kept under key for cluster, marked used; nil when there is none.
func (k *etcdClients) kept(cluster, key string) etcdutil.Client {
	k.mu.Lock()
	defer k.mu.Unlock()
	kc := k.clusters[cluster][key]
	if kc == nil {
		return nil
	}
	kc.used = true
	return kc.cli
}

// release closes the cluster's clients that no call asked for since its last release: at the
// end of each pass, the clients of members that went, of settings that changed, and of an
// action's one-off endpoints.
func (k *etcdClients) release(namespace, name string) {
	k.mu.Lock()
	var unused []etcdutil.Client
	kept := k.clusters[namespace+"/"+name]
	for key, kc := range kept {
		if !kc.used {
			unused = append(unused, kc.cli)
			delete(kept, key)
		}
		kc.used = false
	}
	if len(kept) == 0 {
		delete(k.clusters, namespace+"/"+name)
	}
	k.mu.Unlock()
	k.close(namespace, name, unused)
}

// forget closes every client of the cluster: its loop has ended.
func (k *etcdClients) forget(namespace, name string) {
	k.mu.Lock()
	var all []etcdutil.Client
	for _, kc := range k.clusters[namespace+"/"+name] {
		all = append(all, kc.cli)
	}
	delete(k.clusters, namespace+"/"+name)
	k.mu.Unlock()
	k.close(namespace, name, all)
}

func (k *etcdClients) close(namespace, name string, clients []etcdutil.Client) {
	for _, cli := range clients {
		// A client that fails to close has nothing left to do; its error is no news.
		_ = cli.Close()
		k.recorder.EtcdClientClosed(namespace, name)
	}
}
