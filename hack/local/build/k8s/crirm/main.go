// Command crirm is a minimal CRI client for the local node's containerd (crictl
// is not published as a Go module that builds here). hack/local/up.sh uses
// "version" to wait for the CRI socket; hack/local/down.sh uses "rmall" to stop
// and remove every pod sandbox, which runs CNI DEL, unmounts volumes and kills
// the containers before containerd itself is stopped.
//
// Usage: crirm SOCKET version|ls|rmall
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "crirm:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: crirm SOCKET version|ls|rmall")
	}
	conn, err := grpc.NewClient("unix://"+args[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", args[0], err)
	}
	defer conn.Close()
	c := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	switch args[1] {
	case "version":
		v, err := c.Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			return fmt.Errorf("version: %w", err)
		}
		fmt.Println(v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
		return nil
	case "ls", "rmall":
	default:
		return fmt.Errorf("unknown command %q", args[1])
	}
	r, err := c.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("listing pod sandboxes: %w", err)
	}
	var failed int
	for _, p := range r.Items {
		fmt.Printf("%s %s/%s %s\n", p.Id[:13], p.Metadata.Namespace, p.Metadata.Name, p.State)
		if args[1] != "rmall" {
			continue
		}
		if _, err := c.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "  stopping %s: %v\n", p.Id[:13], err)
			failed++
		}
		if _, err := c.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
			fmt.Fprintf(os.Stderr, "  removing %s: %v\n", p.Id[:13], err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d stop/remove calls failed", failed)
	}
	return nil
}
