# The summary of an interleaved A/B run (scripts/ab_filters.sh, scripts/ab_tables.sh): reads
# lines "SIDE STRUCTURE METRIC VALUE" (SIDE old or new) and prints, per structure and metric in
# the order first seen, the median of each side and new / old.
{ k = $2 " " $3; v[$1 " " k] = v[$1 " " k] " " $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
function median(list,   a, n, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
END {
  printf "# medians (M ops/s)\n%-26s %-30s %8s %8s %6s\n", "structure", "metric", "old", "new", "new/old"
  for (i = 1; i <= n; i++) {
    split(order[i], parts, " ")
    o = median(v["old " order[i]]); m = median(v["new " order[i]])
    printf "%-26s %-30s %8.2f %8.2f %6.2f\n", parts[1], parts[2], o, m, m / o
  }
}
