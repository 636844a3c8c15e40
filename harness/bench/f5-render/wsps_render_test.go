// Renders the nginx config the F5 NGINX Ingress Controller writes for the
// wsps chart's gateway Ingress, with the controller's own code and
// templates. Not a test of anything: harness/bench/scripts/f5-nginx-conf.js
// copies this file into the vendored source's internal/configs (package
// configs, so it can call the controller's unexported generateNginxCfg) and
// runs it with `go test -run TestWspsRender`. Outside that script it skips.
//
// Env: WSPS_F5_INGRESS (the Ingress, YAML as helm renders it), WSPS_F5_ENTRIES (the ConfigMap
// entries, JSON), WSPS_F5_ENDPOINT (the gateway address the upstream gets),
// WSPS_F5_OUT (directory: nginx.conf and conf.d/<namespace>-<name>.conf).
package configs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nginx/kubernetes-ingress/internal/configs/version1"
	v1 "k8s.io/api/core/v1"
	networking "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

func TestWspsRender(t *testing.T) {
	out := os.Getenv("WSPS_F5_OUT")
	if out == "" {
		t.Skip("run by harness/bench/scripts/f5-nginx-conf.js")
	}
	var ing networking.Ingress
	must(t, yaml.Unmarshal([]byte(os.Getenv("WSPS_F5_INGRESS")), &ing))
	entries := map[string]string{}
	mustJSON(t, os.Getenv("WSPS_F5_ENTRIES"), &entries)
	ctx := context.Background()

	// The ConfigMap as the controller reads it (OSS: no Plus, no App Protect).
	cfgm := &v1.ConfigMap{Data: entries}
	params, _ := ParseConfigMap(ctx, cfgm, false, false, false, false, false, nil)

	// The controller's flag defaults (cmd/nginx-ingress/flags.go): port 80,
	// the status server on 8080 for 127.0.0.1, no health or TLS passthrough.
	static := &StaticConfigParams{
		DefaultHTTPListenerPort:  80,
		DefaultHTTPSListenerPort: 443,
		HealthStatusURI:          "/nginx-health",
		NginxStatus:              true,
		NginxStatusAllowCIDRs:    []string{"127.0.0.1", "::1"},
		NginxStatusPort:          8080,
		TLSPassthroughPort:       443,
	}
	te, err := version1.NewTemplateExecutor("version1/nginx.tmpl", "version1/nginx.ingress.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	mainCfg := GenerateNginxMainConfig(static, params, &MGMTConfigParams{})
	mainText, err := te.ExecuteMainConfigTemplate(mainCfg)
	if err != nil {
		t.Fatal(err)
	}

	endpoint := os.Getenv("WSPS_F5_ENDPOINT")
	endpoints := map[string][]string{}
	hosts := map[string]bool{}
	for _, r := range ing.Spec.Rules {
		hosts[r.Host] = true
		for _, p := range r.HTTP.Paths {
			endpoints[p.Backend.Service.Name+GetBackendPortAsString(p.Backend.Service.Port)] = []string{endpoint}
		}
	}
	ingEx := &IngressEx{Ingress: &ing, Endpoints: endpoints, ExternalNameSvcs: map[string]bool{}, ValidHosts: hosts}
	ingCfg, warnings := generateNginxCfg(NginxCfgParams{staticParams: static, ingEx: ingEx, BaseCfgParams: params})
	if len(warnings) != 0 {
		t.Fatalf("the controller warns about the Ingress: %v", warnings)
	}
	ingText, err := te.ExecuteIngressConfigTemplate(&ingCfg)
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.MkdirAll(filepath.Join(out, "conf.d"), 0o755))
	must(t, os.WriteFile(filepath.Join(out, "nginx.conf"), mainText, 0o644))
	must(t, os.WriteFile(filepath.Join(out, "conf.d", ing.Namespace+"-"+ing.Name+".conf"), ingText, 0o644))
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	must(t, json.Unmarshal([]byte(s), v))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
