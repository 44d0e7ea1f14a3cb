--[[
sliding-window-log.lua: dev.sluice.internal.algorithm.SlidingWindowLog, a fragment of decide.lua.
State: a sorted set, one entry per admitted token: score = its time in ms, member = the time and
its index among the entries of that ms, 8 bytes (struct '>I6I2'; unique whatever the rule's
figures, which may change: a plan switch, a reload). Trimmed to the window on each
admission; PEXPIRE = one window after the newest entry + MARGIN.
A request of cost c logs c entries. Sets, for decide.lua's writes: state = the time the entries
are logged at, log_foreign = whether the key holds another type (deleted first), log_index = the
index of the first entry (nil: count the entries already at that time).
]]
local newest = pcall('ZRANGE', key, -1, -1, 'WITHSCORES')
log_foreign, log_index = newest.err ~= nil, 0
local at, in_window, from = now, 0, nil
reset_now, next_now = 0, 0
if not log_foreign and newest[2] then
  newest = newest[2] + 0
  if newest >= now then
    at, log_index = newest, nil -- entries at the logged time already: count them when writing
  end
  from = format('(%d', at - window)
  in_window = call('ZCOUNT', key, from, '+inf')
  if in_window > 0 then
    reset_now = newest + window - now
  end
end
remaining_now = limit - in_window
if cost > limit then
  admits, retry = false, window
elseif in_window + cost > limit then
  local entry = call('ZRANGEBYSCORE', key, from, '+inf', 'WITHSCORES', 'LIMIT', in_window + cost - limit - 1, 1)
  admits, retry = false, entry[2] + window - now
else
  -- an admitting rule has room left, so one more fits as soon as the oldest entry leaves
  local oldest = at
  if in_window > 0 then
    oldest = call('ZRANGEBYSCORE', key, from, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2] + 0
    next_now = oldest + window - now
  end
  admits, remaining_after, reset_after, next_after, delay = true, limit - in_window - cost, at + window - now,
      oldest + window - now, 0
  state, ttl, taken_ms, taken_fraction = at, at + window - now + MARGIN, at, 0
end
