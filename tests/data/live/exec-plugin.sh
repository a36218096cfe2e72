#!/bin/sh
# A test exec credential plugin: counts its runs in $GS_PLUGIN_COUNT, prints a token
# naming the greeting from the kubeconfig's env and the run number, and the expiry in
# $GS_PLUGIN_EXPIRES. Fails unless kubectl's KUBERNETES_EXEC_INFO came with the cluster.
case $KUBERNETES_EXEC_INFO in
  *'"kind":"ExecCredential"'*'"server":"https://c.example:6443"'*) ;;
  *) echo "no KUBERNETES_EXEC_INFO" >&2; exit 3 ;;
esac
[ "$1 $2" = "--cluster c" ] || { echo "bad args: $*" >&2; exit 4; }
n=$(cat "$GS_PLUGIN_COUNT" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "$GS_PLUGIN_COUNT"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s-%s","expirationTimestamp":"%s"}}\n' \
  "$GS_PLUGIN_GREETING" "$n" "$GS_PLUGIN_EXPIRES"
