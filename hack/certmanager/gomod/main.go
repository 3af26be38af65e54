// cert-manager's controller with only what a RayCluster's mTLS needs: the Issuers
// controller (selfSigned and CA issuers), the Certificate controllers that turn a
// Certificate into a signed Secret, the approver and the CertificateRequest signers of
// those two issuers. No webhook, no cainjector, no ACME, Vault or Venafi (not compiled
// in), no leader election: one process beside a test's control plane.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"k8s.io/klog/v2"

	// Each package registers its controller with controllerpkg in its init.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"

	// The issuer kinds the Issuers controller can set up (they register with pkg/issuer).
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// The controllers started, by their registered names; a name missing from the
// registry (a renamed controller after a version bump) stops the process at start.
var enabled = []string{
	"issuers",
	"certificaterequests-approver",
	"certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned",
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
}

const workersPerController = 2

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (in-cluster config when empty)")
	namespace := flag.String("namespace", "", "namespace to watch (all when empty)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager",
		"where a ClusterIssuer's secrets live (ClusterIssuers themselves are not reconciled)")
	readyzAddress := flag.String("readyz-address", "127.0.0.1:0",
		"where GET /readyz answers 200 once every informer has synced")
	klog.InitFlags(flag.CommandLine) // -v, as the upstream controller has it
	flag.Parse()

	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "cert-manager-mtls")

	var ready atomic.Bool
	listener, err := net.Listen("tcp", *readyzAddress)
	if err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
	go serveReadyz(listener, &ready)

	if err := run(ctx, *kubeconfig, *namespace, *clusterResourceNamespace, &ready); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		os.Exit(1)
	}
}

// serveReadyz answers /readyz: 200 once ready is set, 503 before.
func serveReadyz(listener net.Listener, ready *atomic.Bool) {
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			http.Error(w, "informers not synced", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	_ = http.Serve(listener, mux)
}

func run(ctx context.Context, kubeconfig, namespace, clusterResourceNamespace string, ready *atomic.Bool) error {
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		Namespace:          namespace,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace: clusterResourceNamespace,
		},
	})
	if err != nil {
		return err
	}
	// Any Context the factory builds shares its informer factories; this one starts them.
	shared, err := factory.Build()
	if err != nil {
		return err
	}

	known := controllerpkg.Known()
	controllers := make(map[string]controllerpkg.Interface, len(enabled))
	for _, name := range enabled {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("no controller named %q is registered", name)
		}
		controller, err := construct(factory)
		if err != nil {
			return fmt.Errorf("building %s: %w", name, err)
		}
		controllers[name] = controller
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(controllers))
	var running sync.WaitGroup
	for name, controller := range controllers {
		running.Add(1)
		go func() {
			defer running.Done()
			if err := controller.Run(workersPerController, ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	// After every controller has asked for its informers, so that each is started.
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	go func() {
		shared.SharedInformerFactory.WaitForCacheSync(ctx.Done())
		shared.KubeSharedInformerFactory.WaitForCacheSync(ctx.Done())
		if ctx.Err() == nil {
			ready.Store(true)
			logf.FromContext(ctx).Info("started", "controllers", enabled)
		}
	}()

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-errs:
		cancel()
	}
	running.Wait()
	return failed
}
