--[[
decide.lua: decides every rule of one request in one call, atomically.

KEYS[i]   the state key of acquisition i: <key-prefix>{<rule>:<client key>}
ARGV[1]   now, in ms since the epoch; or "redis" to read the server's TIME (clock=redis)
ARGV[2 + 6(i-1)] .. ARGV[7 + 6(i-1)]   acquisition i: algorithm id, limit, window ms, burst,
          max delay ms, cost
Reply     5 integers per acquisition, in order: allowed (1 or 0), remaining, retry-after ms,
          reset ms, delay ms

Either every rule admits the request and each takes its cost, or nothing is written at all:
a request denied by one rule takes nothing from the others. A rule that would admit a denied
request reports allowed = 1 with the figures of its untouched state.
]]
local now = ARGV[1]
if now == 'redis' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor_div(tonumber(t[2]), 1000)
else
  now = tonumber(now)
end

local verdicts = {}
local admitted = true
for i = 1, #KEYS do
  local a = 2 + (i - 1) * 6
  local decide = ALGORITHMS[ARGV[a]]
  if decide == nil then
    return redis.error_reply('ERR sluice: unknown algorithm ' .. tostring(ARGV[a]))
  end
  local v = { decide(KEYS[i], now, tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]),
                     tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])) }
  verdicts[i] = v
  if not v[1] then
    admitted = false
  end
end

local reply = {}
for i = 1, #KEYS do
  local v = verdicts[i]
  local o = (i - 1) * 5
  if admitted then
    v[8]()
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5] = 1, v[4], 0, v[5], v[6]
  elseif v[1] then
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5] = 1, v[2], 0, v[3], 0
  else
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5] = 0, v[2], v[7], v[3], 0
  end
end
return reply
