-- TechEmpower's pipelining script: request() returns N copies of the request, written back to back
-- on each connection; wrk counts every response. Usage: wrk ... -s pipeline.lua -- 16
-- done() prints one JSON line that bench/run reads (see report.lua, which is the same function).

init = function(args)
  local depth = tonumber(args[1]) or 1
  local r = {}
  for i = 1, depth do
    r[i] = wrk.format()
  end
  req = table.concat(r)
end

request = function()
  return req
end

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
