// wsps-cri is the small CRI client cluster-down needs (crictl is not on the Go
// module proxy). It stops and removes every pod sandbox through the runtime,
// so the CNI plugins tear down each pod's veth, IP reservation and netns.
//
//	wsps-cri -endpoint unix:///run/wsps-cluster/containerd/containerd.sock pods
//	wsps-cri -endpoint ... rmp-all
//	wsps-cri -endpoint ... version
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func main() {
	endpoint := flag.String("endpoint", "unix:///run/wsps-cluster/containerd/containerd.sock", "CRI endpoint")
	timeout := flag.Duration("timeout", 60*time.Second, "overall timeout")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: wsps-cri [-endpoint URL] pods|rmp-all|version")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := grpc.NewClient(*endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fail(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)

	switch flag.Arg(0) {
	case "version":
		v, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		if err != nil {
			fail(err)
		}
		fmt.Printf("%s %s (CRI %s)\n", v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
	case "pods":
		pods, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			fail(err)
		}
		for _, p := range pods.Items {
			fmt.Printf("%s\t%s/%s\t%s\n", p.Id[:13], p.Metadata.Namespace, p.Metadata.Name, p.State)
		}
	case "rmp-all":
		pods, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			fail(err)
		}
		failed := 0
		for _, p := range pods.Items {
			name := p.Metadata.Namespace + "/" + p.Metadata.Name
			if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.Id}); err != nil {
				fmt.Fprintf(os.Stderr, "stop %s: %v\n", name, err)
				failed++
				continue
			}
			if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
				fmt.Fprintf(os.Stderr, "remove %s: %v\n", name, err)
				failed++
				continue
			}
			fmt.Printf("removed %s\n", name)
		}
		if failed > 0 {
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown command", flag.Arg(0))
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wsps-cri:", err)
	os.Exit(1)
}
