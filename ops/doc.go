// Package ops holds what an operator touches rather than what a user stores: the server
// configuration (Config, filled from flags, CAIRN_* environment variables and an optional
// YAML file), structured logging, and — as they land — the metrics registry, health checks
// and deployment assets (docs/architecture.md#packages).
//
// Files by concern: config.go (the Config struct, its defaults and accessors),
// config_validate.go (Validate and ConfigError), config_load.go (the settings table, the
// flags, the environment and the YAML file: BindFlags, LoadConfig), logger.go (NewLogger).
//
// Invariants callers rely on:
//
//   - One Config struct is the single source of settings. Every field has a documented
//     unit and default, and the same name in all three layers: YAML key data_dir, flag
//     --data-dir, environment variable CAIRN_DATA_DIR.
//   - Precedence is fixed: flags the user actually set > environment > YAML file >
//     DefaultConfig(). A layer that does not mention a setting never resets it.
//   - A Config returned by LoadConfig has passed Validate. Bad input is a *ConfigError
//     naming where the value came from (flag, variable or file line), the field and the
//     rule it broke; its text names a setting by its flag (--etcd), the name users write,
//     never by the Go field. Nothing in this package panics on user input.
//   - Nothing here reads the environment or the file system behind the caller's back:
//     LoadConfig takes the flag set and a getenv function, so tests and embedders control
//     every input.
//   - Secrets never live in Config, which is printed and logged. Credentials come from the
//     environment only (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: LoadCredentials), never
//     from a flag or the YAML file, and format and log as "set"/"unset", never as values.
//     No ConfigError shows a value that may carry a secret (a URL with user info).
//
// Ops sits above the parts it configures and below the node's assembly (the import order
// in docs/architecture.md, "Packages"): it takes each owned default from the package that
// owns it (meta, shard, workbench, the surfaces), so every default is declared once, and
// only api/server, cmd/cairn and the integration framework import it (deps_test.go).
// Its subpackage ops/backup is the backup archive the admin route and `cairn admin
// backup` share.
package ops
