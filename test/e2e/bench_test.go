//go:build e2e

package e2e

import (
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etcd-operator/etcd-operator/pkg/pki"

	"github.com/etcd-operator/etcd-operator/test/e2e/framework"
)

// benchPoll is how often the figures poll: finer than the tests' interval, so a figure is
// off by at most one kubectl round trip.
const benchPoll = 100 * time.Millisecond

// dnsTTL is how long cluster DNS (CoreDNS, kubeadm's and kind's configuration) may answer a
// name with an address it looked up before.
const dnsTTL = 30 * time.Second

// slowApply is an apply -> Available(3) time far enough off the usual 9-10 s that the bench
// dumps the namespace, member logs included, before it is deleted.
const slowApply = 20 * time.Second

// figure prints one measured figure in a fixed, greppable form.
func figure(t *testing.T, name string, v float64, unit string) {
	t.Helper()
	fmt.Printf("BENCH %-50s %8.1f %s\n", name, v, unit)
}

// waitFast polls cond every benchPoll until it holds and returns the elapsed time.
func waitFast(t *testing.T, desc string, timeout time.Duration, cond func() (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	var last error
	for time.Since(start) < timeout {
		ok, err := cond()
		if ok {
			return time.Since(start)
		}
		last = err
		time.Sleep(benchPoll)
	}
	t.Fatalf("waiting %s for %s: %v", timeout, desc, last)
	return 0
}

// watchCluster waits, with one watch rather than a kubectl per poll, until cond holds for a
// version of the cluster. Polling with kubectl every benchPoll took 12.4 s of CPU in 20 s (a
// kubectl takes about 140 ms here): 60 % of one of the two cores whose speed it measured.
func watchCluster(t *testing.T, f *framework.Framework, name string, cond func(*framework.EtcdCluster) (bool, error)) {
	t.Helper()
	if err := f.WatchEtcdCluster(name, 3*time.Minute, cond); err != nil {
		t.Fatal(err)
	}
}

// TestBenchFigures measures the figures docs/figures.md and the issues quote, on whatever
// cluster KUBECONFIG names: the plain StatefulSet floor and the operator's apply, scale and
// repair times in the same run, the operator's memory, backups and restores of a large
// database next to etcdctl's own snapshot (benchBackups), and many clusters at once next to
// as many StatefulSets, with what they cost the operator (benchScale). make bench runs it;
// it is skipped in make test (figures are not pass/fail). E2E_BENCH_ONLY runs some of its
// parts (benchParts) alone.
func TestBenchFigures(t *testing.T) {
	if os.Getenv("E2E_BENCH") == "" {
		t.Skip("figures only: run with make bench")
	}
	rounds := 3
	if s := os.Getenv("E2E_BENCH_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	}
	runs := benchOnly(t)

	// onePod is the floor of one pod -> Ready, without a volume and with a claim.
	onePod := map[bool]float64{}
	if runs("floor") {
		t.Run("floor", func(t *testing.T) { onePod = benchFloor(t) })
	}
	medians := map[string]float64{}
	if runs("operator") {
		medians = benchApplies(t, rounds, onePod)
		benchApplyDifferences(t, medians, onePod)
	}
	if runs("tls-renewal") {
		t.Run("tls-renewal", benchTLSRenewal)
	}
	if runs("memory") {
		benchMemory(t)
	}
	if runs("backup") {
		t.Run("backup", func(t *testing.T) { benchBackups(t, medians["claims"]) })
	}
	if runs("scale") {
		t.Run("scale", benchScale)
	}
}

// benchParts are the parts of TestBenchFigures, in the order they run.
var benchParts = []string{"floor", "operator", "tls-renewal", "memory", "backup", "scale"}

// benchOnly reads E2E_BENCH_ONLY, a comma-separated list of benchParts, and returns whether a
// part runs: every part when it is empty, only those it names otherwise.
func benchOnly(t *testing.T) func(part string) bool {
	t.Helper()
	only := map[string]bool{}
	for _, p := range strings.Split(os.Getenv("E2E_BENCH_ONLY"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(benchParts, p) {
			t.Fatalf("E2E_BENCH_ONLY names %q: the parts are %s", p, strings.Join(benchParts, ", "))
		}
		only[p] = true
	}
	return func(part string) bool { return len(only) == 0 || only[part] }
}

// benchFloor measures the floor of one pod -> Ready, without a volume and with a claim, and
// a plain StatefulSet's apply and repairs, and returns the one pod's times by claim.
func benchFloor(t *testing.T) map[bool]float64 {
	onePod := map[bool]float64{}
	f := framework.New(t)
	// What a claim on the default StorageClass costs one pod by itself: the part of an
	// apply with claims that no operator can take off (the seed waits for its volume).
	for _, claim := range []bool{false, true} {
		start := time.Now()
		f.Apply(floorPod(claim))
		name := floorPodName(claim)
		f.MustNS("wait", "--for=condition=Ready", "pod/"+name, "--timeout=3m")
		onePod[claim] = time.Since(start).Seconds()
		figure(t, "floor: one pod, "+map[bool]string{false: "no volume", true: "a claim"}[claim]+" -> Ready", onePod[claim], "s")
	}
	start := time.Now()
	f.Apply(etcdStatefulSet)
	healthy := func() (bool, error) { return f.EtcdHealthy("etcd-0", 3) }
	waitFast(t, "statefulset healthy", 3*time.Minute, healthy)
	figure(t, "floor: StatefulSet(3) with claims apply -> healthy", time.Since(start).Seconds(), "s")
	// The same repairs as the operator's below: the StatefulSet controller recreates the
	// pods on their claims.
	for _, pods := range [][]string{{"pod/etcd-1"}, {"pod/etcd-0", "pod/etcd-1", "pod/etcd-2"}} {
		start := time.Now()
		f.MustNS(append([]string{"delete", "--wait=false"}, pods...)...)
		waitFast(t, "statefulset pods replaced", 3*time.Minute, func() (bool, error) {
			out, err := f.NS("get", "pods", "-l", "app=etcd-floor", "-o", "jsonpath={.items[*].metadata.deletionTimestamp}")
			return err == nil && strings.TrimSpace(out) == "", err
		})
		waitFast(t, "statefulset healthy", 3*time.Minute, healthy)
		figure(t, fmt.Sprintf("floor: StatefulSet %d of 3 pods deleted -> healthy", len(pods)), time.Since(start).Seconds(), "s")
	}
	return onePod
}

// benchStorages are the variants benchApplies measures.
var benchStorages = []string{"claims", "emptyDir", benchClientTLS, benchPlaintext, benchClientTLSEmptyDir, benchPlaintextEmptyDir}

// benchApplies measures apply -> Available(3) rounds times for each of benchStorages (the
// first round of claims and emptyDir with its repairs and rollouts), and returns the median
// of each.
func benchApplies(t *testing.T, rounds int, onePod map[bool]float64) map[string]float64 {
	applies := map[string][]float64{}
	for i := 0; i < rounds; i++ {
		for _, storage := range benchStorages {
			t.Run(fmt.Sprintf("operator-%s-round-%d", strings.ReplaceAll(storage, " ", "-"), i), func(t *testing.T) {
				f := framework.New(t)
				requireOperator(t, f)
				waitQuiet(t, f)
				const name = "bench"
				manifest := strings.Replace(exampleManifest(t), "name: example", "name: "+name, 1)
				manifest = strings.TrimRight(manifest, "\n") + "\n"
				if strings.HasPrefix(storage, "emptyDir") {
					manifest += "  storage: {emptyDir: {}}\n"
				}
				switch {
				case strings.HasSuffix(storage, "client TLS"):
					manifest += "  tls: {peer: {}, client: {}}\n"
				case strings.HasSuffix(storage, "plaintext"):
					manifest += "  tls: {}\n"
				}
				start := time.Now()
				f.Apply(manifest)
				watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) { return c.InSpec(3) })
				d := time.Since(start)
				applies[storage] = append(applies[storage], d.Seconds())
				figure(t, "operator: apply -> Available(3), "+storage, d.Seconds(), "s")
				if d > slowApply {
					t.Logf("apply -> Available took %v, more than %v: dumping the namespace", d.Round(time.Millisecond), slowApply)
					f.Dump()
				}
				if i == 0 && (storage == "claims" || storage == "emptyDir") {
					benchRepairs(t, f, name, storage, onePod[true])
					benchRollouts(t, f, name, storage)
				}
			})
		}
	}
	medians := map[string]float64{}
	for _, storage := range benchStorages {
		if a := applies[storage]; len(a) > 0 {
			sort.Float64s(a)
			medians[storage] = a[len(a)/2]
			figure(t, fmt.Sprintf("operator: apply -> Available(3), %s, median of %d", storage, len(a)), medians[storage], "s")
		}
	}
	return medians
}

// benchApplyDifferences prints what claims, client TLS and peer TLS add to an apply, from
// the medians of benchApplies and the one-pod floors of benchFloor.
func benchApplyDifferences(t *testing.T, medians map[string]float64, onePod map[bool]float64) {
	if medians["claims"] > 0 && medians["emptyDir"] > 0 && len(onePod) == 2 {
		// The seed cannot start before its volume exists: what an apply with claims costs over
		// emptyDir, less what one claim costs one pod on this StorageClass, is the operator's
		// own share of it.
		extra := medians["claims"] - medians["emptyDir"]
		figure(t, "operator: apply with claims over emptyDir (medians)", extra, "s")
		figure(t, "operator: the same, less one claim's floor (a claim -> Ready over no volume)", extra-(onePod[true]-onePod[false]), "s")
	}
	if a, b := medians[benchClientTLS], medians["claims"]; a > 0 && b > 0 {
		figure(t, "operator: client TLS over peer TLS alone (medians)", a-b, "s")
	}
	if a, b := medians["claims"], medians[benchPlaintext]; a > 0 && b > 0 {
		figure(t, "operator: peer TLS over plaintext (medians)", a-b, "s")
	}
	// The same on emptyDir, where no claim's provisioning (one at a time on the local-path
	// provisioner) comes between the apply and the members: what TLS itself costs.
	if a, b := medians[benchClientTLSEmptyDir], medians["emptyDir"]; a > 0 && b > 0 {
		figure(t, "operator: client TLS over peer TLS alone, emptyDir (medians)", a-b, "s")
	}
	if a, b := medians["emptyDir"], medians[benchPlaintextEmptyDir]; a > 0 && b > 0 {
		figure(t, "operator: peer TLS over plaintext, emptyDir (medians)", a-b, "s")
	}
}

// The variants of apply -> Available(3) beside claims (peer TLS, the default) and emptyDir:
// with client TLS too, and in plaintext (spec.tls: {}), on claims and on emptyDir.
const (
	benchClientTLS         = "claims, client TLS"
	benchPlaintext         = "claims, plaintext"
	benchClientTLSEmptyDir = "emptyDir, client TLS"
	benchPlaintextEmptyDir = "emptyDir, plaintext"
)

// benchTLSRenewal measures how long a renewed certificate takes from the user's Secret to the
// members' Secrets (the operator's periodic look at a Secret it does not own) and to what
// every member serves (the kubelet's refresh of the mounted Secret, then etcd's next
// handshake).
func benchTLSRenewal(t *testing.T) {
	f := framework.New(t)
	requireOperator(t, f)
	const name = "renew"
	ca := framework.NewTestCA(t, "bench CA")
	serving := framework.Cert{CommonName: name, Names: userNames(f, name, 3), Usages: pki.ServerAuth | pki.ClientAuth}
	f.ApplySecret("renew-client", framework.TLSSecretData(ca, framework.IssueCert(t, ca, serving)))
	f.Apply(clusterManifest(name, "  size: 3\n  storage: {emptyDir: {}}\n  tls:\n    peer: {}\n    client: {secretName: renew-client}\n"))
	f.WaitClusterInSpec(name, 3, 4*time.Minute)
	forwards := map[string]*framework.Forward{}
	for i := 0; i < 3; i++ {
		forwards[fmt.Sprintf("%s-%d", name, i)] = f.PortForward(fmt.Sprintf("%s-%d", name, i), 2379)
	}
	renewed := framework.IssueCert(t, ca, serving)
	start := time.Now()
	f.ApplySecret("renew-client", framework.TLSSecretData(ca, renewed))
	isRenewed := func(c *x509.Certificate) bool { return c.SerialNumber.Cmp(renewed.Cert.SerialNumber) == 0 }
	waitFast(t, "the renewed certificate in every member's Secret", 2*time.Minute, func() (bool, error) {
		for i := 0; i < 3; i++ {
			c, err := f.SecretCertificate(memberTLSSecret(name, i), keyServerCert)
			if err != nil || !isRenewed(c) {
				return false, err
			}
		}
		return true, nil
	})
	figure(t, "tls: renewed Secret -> every member's Secret", time.Since(start).Seconds(), "s")
	waitFast(t, "every member serving the renewed certificate", servedBound, func() (bool, error) {
		for _, fw := range forwards {
			c, err := fw.ServedCertificate()
			if err != nil || !isRenewed(c) {
				return false, err
			}
		}
		return true, nil
	})
	figure(t, "tls: renewed Secret -> served by every member", time.Since(start).Seconds(), "s")
}

// waitSettled waits until the cluster has been settled for as long as cluster DNS may keep a
// member's previous address (CoreDNS's 30 s TTL): right after a repair or a rollout, a
// member that dials a peer whose pod was made again may wait on its old address (see
// figures.md). The repair and rollout figures are of a settled cluster.
func waitSettled(t *testing.T, f *framework.Framework, name string) {
	t.Helper()
	f.Eventually("cluster settled for the DNS TTL", 2*time.Minute, func() (bool, error) {
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			return false, err
		}
		return c.SettledFor(time.Now()) >= dnsTTL, nil
	})
}

func floorPodName(claim bool) string {
	if claim {
		return "floor-claim"
	}
	return "floor-plain"
}

// floorPod is a pod that is Ready once it runs, with or without a claim on the default
// StorageClass.
func floorPod(claim bool) string {
	name := floorPodName(claim)
	volume, mount, pvc := "", "", ""
	if claim {
		pvc = fmt.Sprintf("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: %s\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n---\n", name)
		volume = fmt.Sprintf("  volumes: [{name: data, persistentVolumeClaim: {claimName: %s}}]\n", name)
		mount = "    volumeMounts: [{name: data, mountPath: /data}]\n"
	}
	return pvc + fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 0\n  containers:\n  - name: c\n    image: %s\n    command: [sh, -c, 'exec sleep 3600']\n%s%s",
		name, framework.WriterImage, mount, volume)
}

// benchRepairs measures scaling and the repairs after lost member pods on a running cluster
// of three: with claims the members restart in place (same IDs), with emptyDir they are
// replaced (new IDs).
func benchRepairs(t *testing.T, f *framework.Framework, name, storage string, claimFloor float64) {
	t.Helper()
	if storage == "claims" {
		ids := map[string]string{}
		c, err := f.GetEtcdCluster(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c.Status.Members {
			ids[m.Name] = m.ID
		}
		for _, pods := range [][]string{{"pod/" + name + "-1"}, {"pod/" + name + "-0", "pod/" + name + "-1", "pod/" + name + "-2"}} {
			waitSettled(t, f, name)
			start := time.Now()
			f.MustNS(append([]string{"delete", "--wait=false"}, pods...)...)
			// Settled again since the deletion (its transition time has a resolution of a
			// second: Available stays True while a majority serves), with the same members.
			watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) {
				now := time.Now()
				if c.SettledFor(now) == 0 || c.SettledFor(now) > now.Sub(start)+time.Second {
					return false, fmt.Errorf("not settled again yet")
				}
				for pod, id := range ids {
					if got := c.MemberID(pod); got != id {
						return false, fmt.Errorf("member %s id %q, want %s", pod, got, id)
					}
				}
				return c.InSpec(3)
			})
			figure(t, fmt.Sprintf("operator: %d of 3 member pods deleted -> Available, same members", len(pods)), time.Since(start).Seconds(), "s")
		}
		benchClaimsScale(t, f, name, claimFloor)
		return
	}
	for _, step := range []struct {
		desc    string
		size    int
		settled time.Duration
	}{
		{"operator: scale 3 -> 5 -> Available", 5, 0},
		// etcd refuses to remove a voting member until the members left have been
		// connected for 5 s (strict reconfiguration check): right after a scale-up
		// that is the wait. Measured once at once, once on a settled cluster.
		{"operator: scale 5 -> 3 at once -> Available", 3, 0},
		{"operator: scale 3 -> 5 -> Available (again)", 5, 0},
		{"operator: scale 5 -> 3 settled 6s -> Available", 3, 6 * time.Second},
	} {
		if step.settled > 0 {
			waitFast(t, "cluster settled", time.Minute, func() (bool, error) {
				c, err := f.GetEtcdCluster(name)
				if err != nil {
					return false, err
				}
				return c.SettledFor(time.Now()) >= step.settled, nil
			})
		}
		start := time.Now()
		f.Patch("etcdcluster/"+name, fmt.Sprintf(`{"spec":{"size":%d}}`, step.size))
		watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) { return c.InSpec(step.size) })
		figure(t, step.desc+" (emptyDir)", time.Since(start).Seconds(), "s")
	}
	for _, pod := range []string{name + "-1", name + "-0"} {
		before, err := f.GetEtcdCluster(name)
		if err != nil {
			t.Fatal(err)
		}
		oldID := before.MemberID(pod)
		start := time.Now()
		f.Delete("pod/" + pod)
		watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) {
			if id := c.MemberID(pod); id == "" || id == oldID {
				return false, fmt.Errorf("member %s id %q", pod, id)
			}
			return c.InSpec(3)
		})
		figure(t, "operator: member pod "+strings.TrimPrefix(pod, name)+" deleted -> replaced, Available (emptyDir)", time.Since(start).Seconds(), "s")
	}
	if rss, err := operatorRSS(f); err != nil {
		t.Errorf("operator memory: %v", err)
	} else {
		figure(t, "operator: resident memory (managing clusters)", rss/(1<<20), "MiB")
	}
}

// benchRollouts measures rollouts of a running cluster of three while the acknowledged-write
// checker writes through them: a change of spec.pod (a new resource request, which a new
// patch release rolls the same way: each pod is made again from the new template), on claims
// each member restarted on its data, on emptyDir each replaced; and on claims a minor
// downgrade 3.7 -> 3.6 through etcd's downgrade API (each restarted on its data) and the
// upgrade back (each member replaced). The node holds one patch release per minor, so the
// pod change stands for a patch rollout.
func benchRollouts(t *testing.T, f *framework.Framework, name, storage string) {
	t.Helper()
	writer := f.StartWriter(name)
	writer.WaitAcked(20, time.Minute)
	type rollout struct {
		desc, patch, version string
	}
	steps := []rollout{{"pod change (cpu request)", `{"spec":{"pod":{"resources":{"requests":{"cpu":"60m","memory":"128Mi"}}}}}`, framework.Version37}}
	if storage == "claims" {
		steps = append(steps,
			rollout{"downgrade 3.7 -> 3.6", fmt.Sprintf(`{"spec":{"version":%q}}`, framework.Version36), framework.Version36},
			rollout{"upgrade 3.6 -> 3.7", fmt.Sprintf(`{"spec":{"version":%q}}`, framework.Version37), framework.Version37})
	}
	for _, r := range steps {
		waitSettled(t, f, name)
		before, err := writer.Progress()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		f.Patch("etcdcluster/"+name, r.patch)
		// When each member was first seen done: its pod current, ready, voting, on the version.
		done := map[string]time.Duration{}
		watchCluster(t, f, name, func(c *framework.EtcdCluster) (bool, error) {
			if c.Status.ObservedGeneration != c.Metadata.Generation {
				return false, fmt.Errorf("status at generation %d", c.Status.ObservedGeneration)
			}
			for _, m := range c.Status.Members {
				if _, seen := done[m.Name]; !seen && m.PodCurrent && m.Ready && !m.Learner && m.Version == r.version {
					done[m.Name] = time.Since(start)
				}
			}
			if len(done) < 3 || c.SettledFor(time.Now()) == 0 {
				return false, fmt.Errorf("%d of 3 members done, phase %s", len(done), c.Status.Phase)
			}
			return c.InSpec(3)
		})
		total := time.Since(start)
		var times []time.Duration
		for _, d := range done {
			times = append(times, d)
		}
		sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
		// The first member's time also holds what comes before any member is rolled (the
		// operator seeing the change, enabling a downgrade in etcd); the others' is one
		// member's restart to caught up, after the one before it.
		var later time.Duration
		for i := 1; i < len(times); i++ {
			later = max(later, times[i]-times[i-1])
		}
		slowest := max(times[0], later)
		t.Logf("%s: members done at %v", r.desc, times)
		after, err := writer.Progress()
		if err != nil {
			t.Fatal(err)
		}
		prefix := fmt.Sprintf("operator: rollout, %s (%s)", r.desc, storage)
		figure(t, prefix+" -> all current, Available", total.Seconds(), "s")
		figure(t, prefix+", slowest member", slowest.Seconds(), "s")
		figure(t, prefix+", slowest member after the first", later.Seconds(), "s")
		figure(t, prefix+", puts acknowledged", float64(len(after.Acked)-len(before.Acked)), "puts")
		figure(t, prefix+", puts not acknowledged", float64(after.Failed-before.Failed), "puts")
		figure(t, prefix+", longest wait for an acknowledged put", after.LongestWait(before), "s")
	}
	writer.StopAndVerify(name + "-0")
}

// benchMemory measures the operator's memory with three more clusters running.
func benchMemory(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		f := framework.New(t)
		requireOperator(t, f)
		const clusters = 3
		for i := 0; i < clusters; i++ {
			f.Apply(strings.Replace(exampleManifest(t), "name: example", fmt.Sprintf("name: mem%d", i), 1))
		}
		for i := 0; i < clusters; i++ {
			f.WaitClusterInSpec(fmt.Sprintf("mem%d", i), 3, 3*time.Minute)
		}
		// The highest of a few readings over 30 s of steady passes (each loop requeues
		// itself every 10 s), not one lucky sample right after a collection.
		var peak float64
		for n := 0; n < 6; n++ {
			if n > 0 {
				time.Sleep(5 * time.Second)
			}
			rss, err := operatorRSS(f)
			if err != nil {
				t.Fatalf("operator memory: %v", err)
			}
			peak = max(peak, rss)
		}
		figure(t, fmt.Sprintf("operator: resident memory, %d more clusters (peak)", clusters), peak/(1<<20), "MiB")
	})
}

// operatorRSS reads the operator's resident memory, in bytes.
func operatorRSS(f *framework.Framework) (float64, error) {
	m, err := f.ReadOperatorMemory()
	return m.RSS, err
}
