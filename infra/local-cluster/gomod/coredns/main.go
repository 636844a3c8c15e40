// CoreDNS with only the plugins the local cluster's Corefile uses. The stock
// build links every plugin (cloud DNS SDKs included) and takes ~10 min on 2
// cores; this one links a handful. Plugins not imported here are simply
// unknown to this binary.
package main

import (
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

func main() {
	coremain.Run()
}
