#!/usr/bin/env bash
# Makes the keys and TLS material of the compose cluster (compose.yaml) in ./secrets:
#
#   gen-secrets.sh [certs]   two CAs and the certificates signed by them, and the object
#                            store's credentials; needs only openssl. Refuses to replace
#                            an existing ./secrets (delete it to start over).
#   gen-secrets.sh admin-key the cluster's first admin API key, created straight in etcd
#                            (`cairn admin key create --etcd`, the bootstrap path: no node
#                            needs to run) and written to secrets/admin.key; etcd must be
#                            up (`docker compose up -d etcd`).
#
# What certs writes (the nodes' keys mode 0644 so that the image's non-root user can read
# them through the bind mounts, the directory 0700 so that other users of this host
# cannot; the CA keys, the client key and the credentials 0600):
#
#   peer-ca.pem/.key          the CA of the peer mesh: a certificate it signs makes a node
#   cairnN-peer.pem/.key      node N's peer certificate (DNS cairnN; server and client auth)
#   ca.pem/.key               the CA clients trust for the client and admin listeners
#   cairnN.pem/.key           node N's client-listener certificate (DNS cairnN, localhost,
#                             IP 127.0.0.1)
#   client.pem/.key           a client certificate from ca.pem, for trying mutual TLS
#                             (--tls-client-ca); the compose file does not require one
#   s3.env, minio.env         the object store's credentials, for Cairn (AWS_*) and MinIO
#
# Two CAs, because a node accepts any peer whose certificate the peer CA signs: a client
# certificate must never come from it.
#
# Environment:
#   SECRETS_DIR  where to write (default: ./secrets next to this script)
#   NODES        how many nodes to make certificates for (default: 3)
#   DAYS         validity of the certificates, days (default: 365)
#   CAIRN        the command that runs cairn for admin-key (default: docker compose run
#                against the cli service of compose.yaml)
#   ETCD         the etcd endpoints for admin-key (default: http://etcd:2379, the compose
#                service's name as the cli container sees it)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${SECRETS_DIR:-$here/secrets}"
nodes="${NODES:-3}"
days="${DAYS:-365}"

die() { echo "gen-secrets.sh: $*" >&2; exit 1; }

# issue NAME CA SUBJECT_CN EXTENDED_KEY_USAGE SAN: a P-256 key and a certificate signed by CA.
issue() {
	local name=$1 ca=$2 cn=$3 eku=$4 san=$5
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
		-keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
		"$eku" "$san" >"$dir/$name.ext"
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.pem" -CAkey "$dir/$ca.key" -CAcreateserial \
		-days "$days" -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.pem" 2>/dev/null
	rm -f "$dir/$name.csr" "$dir/$name.ext"
}

new_ca() { # NAME CN
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" -sha256 \
		-subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
		-keyout "$dir/$1.key" -out "$dir/$1.pem" 2>/dev/null
}


certs() {
	command -v openssl >/dev/null || die "needs openssl"
	[ -e "$dir" ] && die "$dir exists; delete it to make new secrets"
	mkdir -p "$dir"
	chmod 0700 "$dir"
	new_ca peer-ca "Cairn peer CA"
	new_ca ca "Cairn client CA"
	for i in $(seq 1 "$nodes"); do
		issue "cairn$i-peer" peer-ca "cairn$i" serverAuth,clientAuth "DNS:cairn$i"
		issue "cairn$i" ca "cairn$i" serverAuth "DNS:cairn$i,DNS:localhost,IP:127.0.0.1"
	done
	issue client ca "cairn operator" clientAuth "DNS:cairn-operator"
	rm -f "$dir"/*.srl
	local user secret
	user="cairn$(openssl rand -hex 4)"
	secret="$(openssl rand -hex 24)"
	printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n' "$user" "$secret" >"$dir/s3.env"
	printf 'MINIO_ROOT_USER=%s\nMINIO_ROOT_PASSWORD=%s\n' "$user" "$secret" >"$dir/minio.env"
	chmod 0644 "$dir"/*.pem "$dir"/cairn*.key
	chmod 0600 "$dir"/ca.key "$dir"/peer-ca.key "$dir"/client.key "$dir"/*.env
	echo "wrote $dir: CAs, certificates for $nodes nodes and a client, object store credentials" >&2
}

admin_key() {
	[ -d "$dir" ] || die "$dir does not exist; run gen-secrets.sh certs first"
	[ -e "$dir/admin.key" ] && die "$dir/admin.key exists (revoke that key and delete the file to make another)"
	local etcd="${ETCD:-http://etcd:2379}" out
	local -a cairn
	if [ -n "${CAIRN:-}" ]; then
		read -r -a cairn <<<"$CAIRN"
	else
		cairn=(docker compose -f "$here/compose.yaml" --profile tools run --rm --no-deps -T cli)
	fi
	out="$("${cairn[@]}" admin key create --etcd "$etcd" --name admin --all-agents \
		--scope workspace:read,workspace:write,review,admin)" || die "cairn admin key create failed"
	# The secret is the last line; the lines before describe the key.
	printf '%s\n' "$out" | sed '$d' >&2
	(umask 077 && printf '%s\n' "$out" | tail -n 1 >"$dir/admin.key")
	echo "wrote $dir/admin.key (mode 0600): the admin key, shown nowhere else" >&2
}

case "${1:-certs}" in
certs) certs ;;
admin-key) admin_key ;;
-h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//' ;;
*) die "unknown command ${1}: certs, admin-key or --help" ;;
esac
