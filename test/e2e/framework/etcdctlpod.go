package framework

import (
	"fmt"
	"strings"
	"time"
)

// EtcdImage is the image of the pods that run etcdctl as a client would (StartEtcdctlPod):
// the default version's, which every node the suite runs on has (hack/local/versions.env).
const EtcdImage = "gcr.io/etcd-development/etcd:v" + Version37

// EtcdctlContainer is the container of an etcdctl pod (StartEtcdctlPod) and of a writer that
// uses TLS.
const EtcdctlContainer = "etcdctl"

// The keys of a Secret in the kubernetes.io/tls layout that cert-manager writes, which
// spec.tls's Secrets and the operator's <cluster>-client-tls use.
const (
	// SecretCA is the CA that signed the certificate (and that the other side must be
	// signed by).
	SecretCA = "ca.crt"
	// SecretCert is the certificate, the leaf first.
	SecretCert = "tls.crt"
	// SecretKey is the certificate's private key.
	SecretKey = "tls.key"
)

// ClientSecretName is the Secret with the client certificate the operator keeps for a
// cluster's applications when its client port uses TLS.
func ClientSecretName(cluster string) string { return cluster + "-client-tls" }

// SecretFile is where a pod of the suite's (StartEtcdctlPod, a writer) finds key of a Secret
// it mounts.
func SecretFile(secret, key string) string { return secretDir(secret) + "/" + key }

func secretDir(secret string) string { return "/secrets/" + secret }

// etcdctlPodSpec is a pod that runs the etcd image (etcdctl, and no shell) with busybox's sh
// and a few of its tools, which an init container copies in from busybox's image (which has
// no etcdctl). Debian's busybox-static, which the local node's image packs, runs anywhere.
type etcdctlPodSpec struct {
	name, app string
	// command runs in the etcd image; PATH has its etcdctl, then the tools (/tools).
	command []string
	env     [][2]string
	// secrets are mounted read-only, each at secretDir (SecretFile).
	secrets []string
	// hostIP and hostName, when set, make hostName resolve to hostIP inside the pod
	// (hostAliases): a name the pod dials without asking cluster DNS.
	hostIP, hostName string
	// work adds an emptyDir at /work.
	work  bool
	avoid []string
	// noTools leaves out the init container and /tools: the pod starts etcd's image alone,
	// and command names a binary of it.
	noTools bool
}

// etcdctlTools are the busybox applets an etcdctl pod gets in /tools.
const etcdctlTools = "sh sleep timeout touch yes head mkfifo"

// toolsInit is the init container that copies busybox and etcdctlTools into /tools.
var toolsInit = fmt.Sprintf(`  initContainers:
  - name: tools
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", %q]
    volumeMounts: [{name: tools, mountPath: /tools}]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
`, WriterImage, "cp /bin/busybox /tools/busybox && for a in "+etcdctlTools+"; do ln -s busybox /tools/$a; done")

func (p etcdctlPodSpec) manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app.kubernetes.io/name: %s}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1%s
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    seccompProfile: {type: RuntimeDefault}
`, p.name, p.app, avoidNodes(p.avoid))
	if p.hostName != "" {
		fmt.Fprintf(&b, "  hostAliases: [{ip: %q, hostnames: [%q]}]\n", p.hostIP, p.hostName)
	}
	if !p.noTools {
		b.WriteString(toolsInit)
	}
	fmt.Fprintf(&b, `  containers:
  - name: %s
    image: %s
    imagePullPolicy: IfNotPresent
    command: [%s]
    env:
    - {name: PATH, value: /usr/local/bin:/tools}
`, EtcdctlContainer, EtcdImage, quoteAll(p.command))
	for _, e := range p.env {
		fmt.Fprintf(&b, "    - {name: %q, value: %q}\n", e[0], e[1])
	}
	b.WriteString("    volumeMounts:\n")
	if !p.noTools {
		b.WriteString("    - {name: tools, mountPath: /tools, readOnly: true}\n")
	}
	if p.work {
		b.WriteString("    - {name: work, mountPath: /work}\n")
	}
	for i, s := range p.secrets {
		fmt.Fprintf(&b, "    - {name: secret-%d, mountPath: %s, readOnly: true}\n", i, secretDir(s))
	}
	b.WriteString(`    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
`)
	p.writeVolumes(&b)
	return b.String()
}

// writeVolumes writes the pod's volumes.
func (p etcdctlPodSpec) writeVolumes(b *strings.Builder) {
	b.WriteString("  volumes:\n")
	if !p.noTools {
		b.WriteString("  - {name: tools, emptyDir: {}}\n")
	}
	if p.work {
		b.WriteString("  - {name: work, emptyDir: {}}\n")
	}
	for i, s := range p.secrets {
		fmt.Fprintf(b, "  - {name: secret-%d, secret: {secretName: %s}}\n", i, s)
	}
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, ", ")
}

// StartEtcdctlPod starts a pod named pod that runs etcdctl as a client in the cluster would
// (EtcdctlIn), with each of the Secrets mounted (SecretFile) and an emptyDir at /work (where
// `etcdctl snapshot save` may write), and waits until it runs. It sets no ETCDCTL_ variable:
// each command says what it dials and with which certificate.
func (f *Framework) StartEtcdctlPod(pod string, secrets ...string) {
	f.t.Helper()
	f.Apply(etcdctlPodSpec{name: pod, app: "e2e-etcdctl", command: []string{"/tools/sleep", "86400"}, secrets: secrets, work: true}.manifest())
	f.WaitFor("pod/"+pod, "condition=Ready", 2*time.Minute)
}

// StartEtcdctlOnce starts a pod named pod that runs etcdctl with args once, as a one-shot
// client would: etcd's image alone (no init container), an emptyDir at /work. It returns
// without waiting; the pod's phase says when etcdctl has ended and how.
func (f *Framework) StartEtcdctlOnce(pod string, args ...string) {
	f.t.Helper()
	f.Apply(etcdctlPodSpec{name: pod, app: "e2e-etcdctl-once", command: append([]string{"/usr/local/bin/etcdctl"}, args...),
		work: true, noTools: true}.manifest())
}

// EtcdctlIn runs etcdctl with args in an etcdctl pod (StartEtcdctlPod) and returns its
// stdout; the error carries its stderr.
func (f *Framework) EtcdctlIn(pod string, args ...string) (string, error) {
	return f.Exec(pod, EtcdctlContainer, append([]string{"etcdctl"}, args...)...)
}

// ClientPod returns the cluster's client pod, an etcdctl pod with the client Secret the
// operator keeps for applications (ClientSecretName), started on first use.
func (f *Framework) ClientPod(cluster string) string {
	f.t.Helper()
	if pod, ok := f.clientPods[cluster]; ok {
		return pod
	}
	pod := "client-" + cluster
	f.StartEtcdctlPod(pod, ClientSecretName(cluster))
	if f.clientPods == nil {
		f.clientPods = map[string]string{}
	}
	f.clientPods[cluster] = pod
	return pod
}
