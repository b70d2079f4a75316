// Command coredns is CoreDNS with the plugins the project's clusters use, for the cluster DNS
// image that hack/local/build.sh builds: those of the Corefile hack/local/manifests/coredns.yaml
// writes and of kubeadm's default Corefile (the kind path), and a few a user may add while
// debugging. CoreDNS's own main links every plugin it ships, cloud DNS providers' SDKs
// among them, which made it the slowest binary of a cold make up; the plugins run as upstream
// builds them, in upstream's order.
package main

import (
	"slices"
	"strings"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/any"
	_ "github.com/coredns/coredns/plugin/autopath"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/bufsize"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/debug"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/k8s_external"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/rewrite"
	_ "github.com/coredns/coredns/plugin/template"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// init keeps, in upstream's order, the directives of the plugins linked: those imported
// above and what they import themselves. A Corefile naming another is refused at start as
// an unknown directive, not left waiting for a plugin that is not there.
func init() {
	linked := map[string]bool{}
	for _, p := range caddy.ListPlugins()["others"] {
		if name, ok := strings.CutPrefix(p, "dns."); ok {
			linked[name] = true
		}
	}
	dnsserver.Directives = slices.DeleteFunc(dnsserver.Directives, func(d string) bool { return !linked[d] })
}

func main() { coremain.Run() }
