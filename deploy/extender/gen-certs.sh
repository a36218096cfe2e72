#!/bin/sh
# gen-certs.sh NAMESPACE [DIR] - a self-signed CA and the extender's serving certificate
# (openssl), stored as the Secret gpusched-extender-tls (tls.crt, tls.key, ca.crt) in
# NAMESPACE. Without cert-manager; certificate.yaml does the same with it.
# The files stay in DIR (default: a new temporary directory): keep ca.key to sign the next
# leaf, or run the script again (a new CA: restart the pods so kube-scheduler reads it).
# Environment: KUBECTL (default kubectl), DAYS (leaf validity, default 365),
# GS_CERTS_ONLY=1 writes the files and creates no Secret.
set -eu
ns=${1:?usage: gen-certs.sh NAMESPACE [DIR]}
dir=${2:-$(mktemp -d)}
days=${DAYS:-365}
mkdir -p "$dir"
cd "$dir"
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.crt -days 3650 -subj /CN=gpusched-extender-ca \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout tls.key -out tls.csr -subj /CN=gpusched-extender
cat > tls.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:gpusched-extender,DNS:gpusched-extender.$ns.svc,DNS:gpusched-extender.$ns.svc.cluster.local
EXT
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
    -out tls.crt -days "$days" -extfile tls.ext
openssl verify -CAfile ca.crt tls.crt >/dev/null
if [ "${GS_CERTS_ONLY:-0}" != 1 ]; then
    ${KUBECTL:-kubectl} -n "$ns" create secret generic gpusched-extender-tls \
        --type=kubernetes.io/tls --from-file=tls.crt --from-file=tls.key --from-file=ca.crt \
        --dry-run=client -o yaml | ${KUBECTL:-kubectl} apply -f -
fi
echo "certificates in $dir (ca.key signs the next leaf: keep it safe or delete it)"
