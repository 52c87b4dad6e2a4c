-- No request() here, so wrk keeps sending its one precomputed request (its fast static mode). Only
-- done(), printing the JSON line bench/run reads; keep it identical to pipeline.lua's.

done = function(summary, latency, requests)
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    summary.errors.connect, summary.errors.read, summary.errors.write,
    summary.errors.status, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
