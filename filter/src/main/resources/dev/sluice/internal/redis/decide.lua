--[[
decide.lua: decides every rule of one request in one call, atomically.

KEYS[i]   the state key of acquisition i: <key-prefix>{<rule>:<client key>}
ARGV[1]   now, in ms since the epoch; or "redis" to read the server's TIME (clock=redis)
ARGV[2 + 6(i-1)] .. ARGV[7 + 6(i-1)]   acquisition i: algorithm id, limit, window ms, burst,
          max delay ms, cost
Reply     6 integers per acquisition, in order: allowed (1 or 0), remaining, retry-after ms,
          reset ms, next ms (until remaining grows; the retry-after when denied), delay ms

Either every rule admits the request and each takes its cost, or nothing is written at all:
a request denied by one rule takes nothing from the others. A rule that would admit a denied
request reports allowed = 1 with the figures of its untouched state.
]]
local now = ARGV[1]
if now == 'redis' then
  local t = redis.call('TIME')
  -- seconds followed by the milliseconds of the zero-padded microseconds: one number to parse
  now = (t[1] .. string.sub('00000' .. t[2], -6, -4)) + 0
else
  now = now + 0
end

-- One acquisition: its limit, window and cost, then its verdict (see common.lua); nothing for an
-- unknown algorithm.
local function decide(i)
  local a = 2 + (i - 1) * 6
  local algorithm = ARGV[a]
  local key, limit, window, cost = KEYS[i], ARGV[a + 1] + 0, ARGV[a + 2] + 0, ARGV[a + 5] + 0
  if algorithm == 'token-bucket' then
    return limit, window, cost, token_bucket(key, now, limit, window, ARGV[a + 3] + 0, cost)
  elseif algorithm == 'gcra' then
    return limit, window, cost, gcra(key, now, limit, window, ARGV[a + 3] + 0, cost)
  elseif algorithm == 'fixed-window' then
    return limit, window, cost, fixed_window(key, now, limit, window, cost)
  elseif algorithm == 'sliding-window-counter' then
    return limit, window, cost, sliding_window_counter(key, now, limit, window, cost)
  elseif algorithm == 'leaky-bucket' then
    return limit, window, cost,
        leaky_bucket(key, now, limit, window, ARGV[a + 3] + 0, ARGV[a + 4] + 0, cost)
  elseif algorithm == 'sliding-window-log' then
    return limit, window, cost, sliding_window_log(key, now, limit, window, cost)
  end
end

local function unknown(i)
  return redis.error_reply('ERR sluice: unknown algorithm ' .. tostring(ARGV[2 + (i - 1) * 6]))
end

local function write(i, limit, window, cost, state, ttl)
  if type(state) == 'string' then
    redis.call('SET', KEYS[i], state, 'PX', format('%d', ttl))
  else
    sliding_window_log_append(KEYS[i], now, limit, window, cost, state, ttl)
  end
end

local n = #KEYS
if n == 1 then -- the common case, without the tables a request of several rules needs
  local limit, window, cost, allowed, remaining_now, reset_now, next_now, remaining_after, reset_after, next_after, delay,
      retry, state, ttl = decide(1)
  if limit == nil then
    return unknown(1)
  end
  if allowed then
    write(1, limit, window, cost, state, ttl)
    return { 1, remaining_after, 0, reset_after, next_after, delay }
  end
  return { 0, remaining_now, retry, reset_now, retry, 0 }
end

local verdicts = {}
local admitted = true
for i = 1, n do
  local v = { decide(i) }
  if v[1] == nil then
    return unknown(i)
  end
  verdicts[i] = v
  if not v[4] then
    admitted = false
  end
end

local reply = {}
for i = 1, n do
  local v = verdicts[i]
  local o = (i - 1) * 6
  -- v: limit, window, cost, then the verdict (common.lua)
  if admitted then
    write(i, v[1], v[2], v[3], v[13], v[14])
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5], reply[o + 6] = 1, v[8], 0, v[9], v[10], v[11]
  elseif v[4] then
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5], reply[o + 6] = 1, v[5], 0, v[6], v[7], 0
  else
    reply[o + 1], reply[o + 2], reply[o + 3], reply[o + 4], reply[o + 5], reply[o + 6] = 0, v[5], v[12], v[6], v[12], 0
  end
end
return reply
