package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	api "github.com/etcd-operator/etcd-operator/pkg/apis/etcd/v1alpha1"
	"github.com/etcd-operator/etcd-operator/pkg/member"
)

// runStatus prints the cluster's status as the operator wrote it (phase, conditions) and each
// member as etcd and Kubernetes see it now. A cluster none of whose members answers is still
// described, from its pods and the operator's status, with why.
func runStatus(ctx context.Context, env *Env, name string) error {
	c, err := getCluster(ctx, env, name)
	if err != nil {
		return err
	}
	s, err := connect(ctx, env, c)
	if err != nil && !errors.Is(err, ErrUnreachable) {
		return err
	}
	defer s.close()
	var alarms []alarmRow
	if s.client != nil && s.listErr == nil {
		alarms, err = listAlarms(ctx, s)
		if err != nil {
			fmt.Fprintf(env.ErrOut, "Warning: %v\n", err)
		}
	}
	printStatus(env.Out, s, alarms, env.Now())
	return nil
}

// printStatus writes the status page of a session.
func printStatus(w io.Writer, s *session, alarms []alarmRow, now time.Time) {
	printSummary(w, s.cluster)
	printConditions(w, s.cluster, now)
	printMemberStatus(w, s)
	if len(alarms) > 0 {
		fmt.Fprintln(w, "\nAlarms:")
		printAlarms(w, alarms)
	}
	if notes := statusNotes(s); len(notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
	}
}

// printSummary writes the cluster's own fields, as the operator last wrote its status.
func printSummary(w io.Writer, c *api.EtcdCluster) {
	version := orDash(c.Status.CurrentVersion)
	if c.Spec.Version != "" && strings.TrimPrefix(c.Spec.Version, "v") != c.Status.CurrentVersion {
		version += " (spec " + c.Spec.Version + ")"
	}
	t := newTable(w)
	row(t, "Name:", c.Name)
	row(t, "Namespace:", c.Namespace)
	row(t, "Phase:", orDash(string(c.Status.Phase)))
	row(t, "Version:", version)
	row(t, "Members:", fmt.Sprintf("%d ready of %d (spec.size %d)", c.Status.ReadyMembers, c.Status.Size, c.Spec.Size))
	row(t, "Client URL:", member.ServiceClientURL(c))
	row(t, "TLS:", tlsSummary(c))
	row(t, "Backend quota:", bytesIEC(quota(c)))
	_ = t.Flush()
}

// printConditions writes the cluster's conditions, each with its age at now.
func printConditions(w io.Writer, c *api.EtcdCluster, now time.Time) {
	fmt.Fprintln(w, "\nConditions:")
	t := newTable(w)
	row(t, "TYPE", "STATUS", "REASON", "AGE", "MESSAGE")
	for _, cond := range c.Status.Conditions {
		row(t, cond.Type, string(cond.Status), orDash(cond.Reason), age(cond.LastTransitionTime.Time, now), orDash(cond.Message))
	}
	_ = t.Flush()
}

// printMemberStatus writes one row per member or member pod: what etcd said of it now, and its
// claim and pod as Kubernetes sees them; "-" for what could not be learnt.
func printMemberStatus(w io.Writer, s *session) {
	c := s.cluster
	fmt.Fprintln(w, "\nMembers:")
	t := newTable(w)
	row(t, "NAME", "ID", "ROLE", "VERSION", "RAFT INDEX", "DB SIZE", "IN USE", "CLAIM", "POD", "NODE")
	claims := map[string]string{}
	for _, m := range c.Status.Members {
		claims[m.Name] = m.Claim
	}
	q := quota(c)
	for _, v := range s.members {
		id, version, index, size, inUse := "-", "-", "-", "-", "-"
		if v.Member != nil {
			id = member.FormatID(v.Member.ID)
		}
		if st := v.Status; st != nil {
			version = st.Version
			index = strconv.FormatUint(st.RaftIndex, 10)
			size = bytesIEC(st.DBSize) + " (" + percent(st.DBSize, q) + ")"
			inUse = bytesIEC(st.DBSizeInUse)
		}
		pod, node := "-", "-"
		if v.Pod != nil {
			pod, node = podState(v.Pod), orDash(v.Pod.Spec.NodeName)
		}
		row(t, v.Name, id, s.role(v), version, index, size, inUse, orDash(claims[v.Name]), pod, node)
	}
	_ = t.Flush()
}

// statusNotes says why the page lacks what it lacks: the member list unread, members that did
// not answer, pods that answer but are no member.
func statusNotes(s *session) []string {
	var notes []string
	switch {
	case errors.Is(s.listErr, ErrUnreachable):
		notes = append(notes, s.listErr.Error())
	case s.listErr != nil:
		notes = append(notes, fmt.Sprintf("etcd's member list: %v", s.listErr))
	}
	for _, v := range s.members {
		switch {
		case v.Status == nil && v.Err != nil:
			notes = append(notes, fmt.Sprintf("%s: %v", v.Name, v.Err))
		case v.Member == nil && s.listErr == nil:
			notes = append(notes, fmt.Sprintf("%s: its pod answers, but it is not in etcd's member list", v.Name))
		}
	}
	return notes
}

// tlsSummary says which ports use TLS.
func tlsSummary(c *api.EtcdCluster) string {
	var ports []string
	if member.PeerTLS(c) {
		ports = append(ports, "peer")
	}
	if member.ClientTLS(c) {
		ports = append(ports, "client (secret "+clientSecretName(c)+")")
	}
	if len(ports) == 0 {
		return "none"
	}
	return strings.Join(ports, ", ")
}

// clientSecretName is the Secret of the cluster's client certificate.
func clientSecretName(c *api.EtcdCluster) string {
	if c.Status.TLS != nil && c.Status.TLS.ClientSecretName != "" {
		return c.Status.TLS.ClientSecretName
	}
	return member.ClientTLSSecretName(c.Name)
}
