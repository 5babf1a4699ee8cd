// Package deploy holds Cairn's deployment assets and the tests that check them without a
// container runtime (docs/architecture.md#packages, ops):
//
//	Dockerfile                 multi-stage build: a static binary (CGO off) on a
//	                           distroless base, non-root, HEALTHCHECK by `cairn health`
//	compose/compose.yaml       3 nodes, etcd and MinIO, with TLS and API keys
//	compose/gen-secrets.sh     the CAs, certificates, credentials and first admin key
//	kubernetes/*.yaml          namespace, StatefulSet, headless and client Services,
//	                           PodDisruptionBudget, ConfigMap and Secrets
//	systemd/cairn.service      a hardened unit, and cairn.env, its settings
//	grafana/cairn-dashboard.json
//
// The package has no code and nothing imports it; its tests are what `go test ./...`
// runs for the assets. Invariants they hold the assets to:
//
//   - The compose file loads with the compose-spec loader, and every manifest decodes
//     strictly (an unknown field fails) into the k8s.io/api type its kind names.
//   - Every setting an asset hands a node (compose environment, ConfigMap and pod env,
//     systemd EnvironmentFile) names a real CAIRN_* variable, and together they pass
//     ops.LoadConfig, as `cairn serve` would read them.
//   - Every TLS file a node is configured with is one the asset actually mounts, and the
//     generated certificates verify for the names peers and clients dial.
//   - Every PromQL expression of the dashboard names only metrics a running node exports.
//   - The systemd unit passes `systemd-analyze verify` where the tool exists.
//
// The tests start a node in-process through api/server, which package ops itself must
// never import; that is why they live in this package of their own.
package deploy
