// The real node's cluster DNS: CoreDNS built with a short plugin list of our own
// instead of upstream's plugin.cfg, so none of the cloud back ends (and their modules)
// are compiled in. No forward plugin: pods resolve cluster names only, and nothing
// is ever sent outside the sandbox.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"

	// Compiled in anyway (kubernetes and cache import them); named here so that the
	// list above is the whole list, and ordered below so a Corefile may use them.
	_ "github.com/coredns/coredns/plugin/metadata"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/transfer"
)

// The order a query passes the plugins in, whatever order a Corefile names them:
// the relative order of upstream's plugin.cfg.
var directives = []string{
	"metadata",
	"reload",
	"bind",
	"ready",
	"health",
	"prometheus",
	"errors",
	"log",
	"cache",
	"transfer",
	"kubernetes",
}

func main() {
	dnsserver.Directives = directives
	coremain.Run()
}
