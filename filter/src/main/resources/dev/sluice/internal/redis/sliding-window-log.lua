--[[
sliding-window-log.lua: dev.sluice.internal.algorithm.SlidingWindowLog.
KEYS: the client's key. State: a sorted set, one entry per admitted token: score = its time in
ms, member = (time mod window) x limit + its index among the entries of that ms, an integer
unique within one window. Trimmed to the window on each admission; PEXPIRE = one window after
the newest entry + MARGIN. A request of cost c logs c entries.
sliding_window_log returns, in place of state and ttl, the time its entries are logged at and
whether the key holds another algorithm's state; decide.lua then calls sliding_window_log_append.
]]
local function sliding_window_log(key, now, limit, window, cost)
  local newest = redis.pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
  local foreign = newest.err ~= nil -- another algorithm's state: start afresh
  local at, in_window, reset_now = now, 0, 0
  if not foreign and newest[2] then
    newest = newest[2] + 0
    at = max(now, newest)
    in_window = redis.call('ZCOUNT', key, format('(%d', at - window), '+inf')
    if in_window > 0 then
      reset_now = newest + window - now
    end
  end
  if cost > limit then
    return false, limit - in_window, reset_now, 0, 0, 0, 0, 0, window
  end
  if in_window + cost > limit then
    local must_leave = in_window + cost - limit
    local entry = redis.call('ZRANGEBYSCORE', key, format('(%d', at - window), '+inf', 'WITHSCORES', 'LIMIT', must_leave - 1, 1)
    return false, limit - in_window, reset_now, 0, 0, 0, 0, 0, entry[2] + 0 + window - now
  end
  -- an admitting rule has room left, so one more fits as soon as the oldest entry leaves
  local oldest, next_now = at, 0
  if in_window > 0 then
    oldest = redis.call('ZRANGEBYSCORE', key, format('(%d', at - window), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2] + 0
    next_now = oldest + window - now
  end
  return true, limit - in_window, reset_now, next_now, limit - in_window - cost, at + window - now,
      oldest + window - now, 0, 0, at, foreign
end

local function sliding_window_log_append(key, now, limit, window, cost, at, foreign)
  if foreign then
    redis.call('DEL', key)
  end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', format('%d', at - window))
  local score = format('%d', at)
  local member = floor_div(at, window) -- reused below as (at mod window) x limit + index
  member = (at - member * window) * limit + redis.call('ZCOUNT', key, score, score)
  local i = 0
  while i < cost do
    local args = {}
    local n = min(cost - i, 1000)
    for j = 1, n do
      args[2 * j - 1] = score
      args[2 * j] = format('%d', member + i + j - 1)
    end
    redis.call('ZADD', key, unpack(args))
    i = i + n
  end
  redis.call('PEXPIRE', key, format('%d', at + window - now + MARGIN))
end
