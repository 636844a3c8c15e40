// The cluster's NetworkPolicy enforcer: sigs.k8s.io/kube-network-policies'
// controller run as a host process, like CoreDNS and kube-proxy here.
//
// Upstream's cmd/main.go is for a DaemonSet pod (in-cluster config, NRI);
// this main differs only where the local cluster does:
//   - --kubeconfig: a host process talks to the apiserver on 127.0.0.1;
//   - no NRI (containerd 1.6 has none): pod IPs come from the API;
//   - no DNS race workaround (kernel >= 6.12 has the fix, and cluster DNS is
//     on the node, where policies never apply);
//   - SIGTERM ends it cleanly (upstream stops on SIGINT only), so the
//     controller deletes its nftables table on the way out;
//   - --cleanup deletes that table after a kill -9 (cluster-down);
//   - /readyz: the table exists and the nfqueue is bound, i.e. every new
//     connection of a pod is being judged.
//
// The controller package is built from a copy of the module changed by
// patch.sh: the xtables NFQUEUE target instead of nft's queue expression
// (nft_queue is not in every kernel; nft_compat + xt_NFQUEUE are), and no
// crash on a nil NRI plugin.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/nftables"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

// The controller's table (networkpolicy.Config.NFTableName's default).
const tableName = "kube-network-policies"

func main() {
	klog.InitFlags(nil)
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the controller's user")
	nodeName := flag.String("hostname-override", "", "the node's name")
	queueID := flag.Int("nfqueue-id", 100, "nfqueue number")
	listen := flag.String("listen", "127.0.0.1:9080", "address of /metrics and /readyz")
	cleanup := flag.Bool("cleanup", false, "delete the controller's nftables table and exit")
	flag.Parse()

	if *cleanup {
		if err := deleteTable(); err != nil {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*kubeconfig, *nodeName, *queueID, *listen); err != nil {
		klog.ErrorS(err, "kube-network-policies")
		os.Exit(1)
	}
}

func run(kubeconfig, nodeName string, queueID int, listen string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	config.ContentType = "application/vnd.kubernetes.protobuf"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(client,
		factory.Networking().V1().NetworkPolicies(), factory.Core().V1().Namespaces(), factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			FailOpen:            false,
			QueueID:             queueID,
			NodeName:            nodeName,
			NetfilterBug1766Fix: false,
			NRIdisabled:         true,
		})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(queueID); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Addr: listen, Handler: mux}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.ErrorS(err, "metrics server")
			cancel()
		}
	}()

	done := make(chan error, 1)
	go func() { done <- controller.Run(ctx) }()
	factory.Start(ctx.Done())
	// Run returns after ctx ends, once its deferred cleanup removed the table.
	err = <-done
	_ = srv.Close()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// ready: the controller's table is in place and a process is bound to its
// nfqueue (/proc/net/netfilter/nfnetlink_queue lists bound queues first).
func ready(queueID int) error {
	conn, err := nftables.New()
	if err != nil {
		return err
	}
	if _, err := conn.ListTableOfFamily(tableName, nftables.TableFamilyINet); err != nil {
		return fmt.Errorf("no nftables table inet %s: %w", tableName, err)
	}
	queues, err := os.ReadFile("/proc/net/netfilter/nfnetlink_queue")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(queues), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == fmt.Sprint(queueID) {
			return nil
		}
	}
	return fmt.Errorf("nfqueue %d is not bound", queueID)
}

func deleteTable() error {
	conn, err := nftables.New()
	if err != nil {
		return err
	}
	// Add then delete: deleting a table that is not there is no error.
	table := &nftables.Table{Name: tableName, Family: nftables.TableFamilyINet}
	conn.AddTable(table)
	conn.DelTable(table)
	return conn.Flush()
}
