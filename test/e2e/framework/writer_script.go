package framework

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// The writer's scripts start as few processes per put as they can: every process a put
// starts costs the node's two cores a fork and an exec, which at the writer's pace added up to
// most of the system time of a suite run (a million processes, by process accounting), beside
// the CPU the clusters under test need.

// writerValue is the value the writer puts under ack/<i> (writerPrefix): v and i in 8 digits,
// as the key has it, so that both are made of groups of three bytes (writerTables).
func writerValue(i int) string { return fmt.Sprintf("v%08d", i) }

// writerPace is the writers' pause between two puts, which sets their pace (at most 20 puts a
// second, fewer when puts are slow): a put every few tens of milliseconds finds any window in
// which acknowledged writes could be lost, and an unpaced writer only loads the cluster and
// the node more. The pause is `read -t` on a pipe nobody writes to, a shell builtin where
// sleep would be one more process; nothing waits on it.
const writerPace = "0.05"

// writerPlainScript puts ack/<i> = writerValue(i) for i = 0, 1, ... through the cluster's
// client Service, one request at a time, with etcd's JSON gateway (POST /v3/kv/put), and
// prints "ACK i t" for each put etcd acknowledged (an answer with a revision) and "FAIL i t"
// for the others, t being when the answer came (the node's uptime, in seconds, read by a shell
// builtin), until /work/stop exists; then "DONE". A failed put may or may not have been
// applied; an acknowledged one must never be lost. timeout bounds each request: wget's own -T
// crashes the static busybox the suite's images are packed from. The key and the value, in
// base64 as the gateway takes them, come from writerTables by shell builtins: a put starts
// two processes (timeout and wget).
const writerPlainScript = `
mkfifo /work/pace && exec 3<>/work/pace
i=0
while [ ! -e /work/stop ]; do
  n=$((100000000+i)); s=${n#1}; a=${s%??????}; r=${s#??}; b=${r%???}; c=${r#???}
  eval "k=YWNr\$K_$a\$T_$b\$T_$c v=\$V_$a\$T_$b\$T_$c"
  : >/work/out
  body=
  if timeout 2 wget -q -O /work/out --post-data "{\"key\":\"$k\",\"value\":\"$v\"}" "$ENDPOINT/v3/kv/put" 2>/dev/null; then
    read -r body </work/out
  fi
  case $body in
  *'"revision"'*) verb=ACK ;;
  *) verb=FAIL ;;
  esac
  read t _ </proc/uptime
  echo "$verb $i $t"
  i=$((i+1))
  read -t ` + writerPace + ` -u 3 _
done
echo DONE
`

// writerScript is writerPlainScript after the tables it reads.
func writerScript() string { return writerTables() + writerPlainScript }

// writerTables are shell assignments of the base64 of every group of three bytes the writer's
// keys (ack/ and 8 digits: "ack", "/" and 2 digits, 3 digits, 3 digits) and values (v and 8
// digits: "v" and 2 digits, 3 digits, 3 digits) are made of: K_dd, V_dd and T_ddd. Three bytes
// are four base64 characters with no padding, so a key's base64 is its groups' side by side.
func writerTables() string {
	enc := base64.StdEncoding.EncodeToString
	var b strings.Builder
	for i := 0; i < 100; i++ {
		dd := fmt.Sprintf("%02d", i)
		fmt.Fprintf(&b, "K_%s=%s V_%s=%s\n", dd, enc([]byte("/"+dd)), dd, enc([]byte("v"+dd)))
	}
	for i := 0; i < 1000; i++ {
		ddd := fmt.Sprintf("%03d", i)
		fmt.Fprintf(&b, "T_%s=%s\n", ddd, enc([]byte(ddd)))
	}
	return b.String()
}

// tlsWriterScript is writerPlainScript for a cluster whose client port uses TLS: busybox's
// wget cannot present a client certificate, so each put is an etcdctl process (in the etcd
// image, with busybox's sh: etcdctlPodSpec), with the client certificate the operator keeps
// for applications. It dials the client Service by its full name, which the members'
// certificate names and the pod's hosts file maps to the Service's address (no DNS lookup per
// put). Each put costs about 15 ms of CPU, mostly the process's start (measured on the suite's
// machine), so this writer pauses four times as long between puts.
func tlsWriterScript() string {
	return `
mkfifo /work/pace && exec 3<>/work/pace
i=0
while [ ! -e /work/stop ]; do
  n=$((100000000+i)); s=${n#1}
  if timeout 5 etcdctl --endpoints="$ENDPOINT" --cacert="$SECRET_DIR/ca.crt" --cert="$SECRET_DIR/tls.crt" \
      --key="$SECRET_DIR/tls.key" --dial-timeout=2s --command-timeout=2s \
      put "ack/$s" "v$s" >/dev/null 2>&1; then
    verb=ACK
  else
    verb=FAIL
  fi
  read t _ </proc/uptime
  echo "$verb $i $t"
  i=$((i+1))
  read -t 0.2 -u 3 _
done
echo DONE
`
}
