// Reads a cascade dataset with DuckDB, as a user would, and checks that
// what DuckDB sees agrees with the summary cascade printed.
// Usage: node duckdb_check.mjs DATASET SUMMARY.json
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, summaryPath] = process.argv.slice(2);
const text = readFileSync(summaryPath, 'utf8');
const summary = JSON.parse(text);
// Times are int64 nanoseconds, beyond a JS number's exact range: take the
// digits from the text. DuckDB reads a UTC-adjusted timestamp as
// TIMESTAMPTZ, which holds microseconds, so compare at that precision.
const firstNS = /"span_range":\s*{\s*"start":\s*(\d+)/.exec(text)[1];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const one = async (q) => (await c.runAndReadAll(q)).getRowObjectsJson()[0];

const s = await one(`SELECT count(*) AS spans, count(DISTINCT trace_id) AS traces,
  count(DISTINCT service) AS services,
  count(*) FILTER (WHERE status = 'error') AS errors,
  count(*) FILTER (WHERE parent_span_id = '') AS roots,
  epoch_us(min(start)) AS first,
  count(*) FILTER (WHERE len(links) > 0) AS linked,
  count(*) FILTER (WHERE messaging_operation <> '') AS messaging
  FROM read_parquet('${dir}/spans.parquet')`);
const m = await one(`SELECT count(*) AS samples,
  count(DISTINCT (service, instance, metric, labels)) AS series
  FROM read_parquet('${dir}/metrics.parquet')`);
const sorted = await one(`SELECT count(*) AS bad FROM (
  SELECT trace_id < lag(trace_id) OVER () AS unordered FROM read_parquet('${dir}/spans.parquet'))
  WHERE unordered`);

const checks = [
  ['spans', Number(s.spans), summary.spans],
  ['traces', Number(s.traces), summary.traces],
  ['services', Number(s.services), summary.services.length],
  ['error spans', Number(s.errors), summary.error_spans],
  ['root spans', Number(s.roots), summary.root_spans],
  ['first start (µs)', String(s.first), String(BigInt(firstNS) / 1000n)],
  // The summary leaves these out when zero.
  ['spans with links', Number(s.linked), summary.linked_spans ?? 0],
  ['messaging spans', Number(s.messaging), summary.messaging_spans ?? 0],
  ['samples', Number(m.samples), summary.samples],
  ['series', Number(m.series), summary.series],
  ['rows out of trace order', Number(sorted.bad), 0],
];
let failed = false;
for (const [what, got, want] of checks) {
  const ok = got === want;
  failed ||= !ok;
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}: duckdb ${got}, cascade ${want}`);
}
process.exit(failed ? 1 : 0);
