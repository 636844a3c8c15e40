// The OpenTelemetry Collector of the tests: a custom distribution with only
// what a test needs to see the services' spans. The OTLP receiver takes
// OTLP/HTTP (JSON or protobuf, what @opentelemetry/exporter-trace-otlp-http
// sends) and gRPC; the file exporter writes each batch it receives as one
// line of OTLP JSON (harness/testkit/src/otel-collector.js reads it). The
// stock otelcol-contrib links some 200 components and takes far longer to
// build on 2 cores; components not listed here are unknown to this binary.
//
// What `ocb` (go.opentelemetry.io/collector/cmd/builder) would generate for
// these components, written by hand: the builder is one more tool to build,
// and its output would be committed anyway. infra/otelcol/README.md says how
// to move to another release.
package main

import (
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// version is set by tools/tools.sh (-X main.version=$OTELCOL_VERSION).
var version = "dev"

func components() (otelcol.Factories, error) {
	// The collector refuses to start without a telemetry factory (its own
	// logs and metrics); this is the one every distribution uses.
	factories := otelcol.Factories{Telemetry: otelconftelemetry.NewFactory()}
	var err error
	if factories.Receivers, err = otelcol.MakeFactoryMap[receiver.Factory](otlpreceiver.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	if factories.Exporters, err = otelcol.MakeFactoryMap[exporter.Factory](fileexporter.NewFactory()); err != nil {
		return otelcol.Factories{}, err
	}
	return factories, nil
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol",
			Description: "wsps test collector (OTLP receiver, file exporter)",
			Version:     version,
		},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				// --config=FILE, and ${env:NAME} inside it (the default
				// scheme of ${NAME} is env, which must then be known).
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory(), envprovider.NewFactory()},
			},
		},
	}
	// cobra prints the error.
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		os.Exit(1)
	}
}
