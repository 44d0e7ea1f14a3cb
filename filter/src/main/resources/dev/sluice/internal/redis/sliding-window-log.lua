--[[
sliding-window-log.lua: dev.sluice.internal.algorithm.SlidingWindowLog, a fragment of decide.lua.
Sections: #write logs the entries; #give-back removes them.
State: a sorted set, one entry per admitted token: score = its time in ms, member = the time and
its index among the entries of that ms, 8 bytes (struct '>I6I2'; unique whatever the rule's
figures, which may change: a plan switch, a reload). The decision reads entries' times from their
members: a score comes back as text (Redis's %.17g) that Lua would parse again. Trimmed to the window on each
admission; PEXPIRE = one window after the newest entry + MARGIN.
A request of cost c logs c entries. Sets, for decide.lua's writes: state = the time the entries
are logged at, log_foreign = whether the key holds another type (deleted first), log_index = the
index of the first entry (nil: count the entries already at that time).
]]
-- an entry's time, from its member (the reply spares the score's text and its parsing): the member's
-- first 6 bytes; a member logged by 0.1 (a decimal number, its first byte a digit, where a time's is
-- below 48 until the year 3600), or any other that is not 8 bytes, holds no time: its score does
local function logged_at(member)
  if #member == 8 and string.byte(member) < 48 then
    return (decode('>I6', member))
  end
  return call('ZSCORE', key, member) + 0
end
local newest = pcall('ZRANGE', key, '-1', '-1')
log_foreign, log_index = newest.err ~= nil, 0
local at, in_window, from = now, 0, nil
reset_now, next_now = 0, 0
if not log_foreign and newest[1] then
  newest = logged_at(newest[1])
  if newest >= now then
    at, log_index = newest, nil -- entries at the logged time already: count them when writing
  end
  if newest > at - window then -- else every entry has left the window
    if limit > 16 and limit <= 128 then
      -- a set of up to 128 entries is a listpack (Redis's default zset-max-listpack-entries), which a count
      -- by score walks from the oldest entry: those that left the window are few, those in it up to 128
      local left = format('%d', at - window)
      in_window = call('ZCARD', key) - call('ZCOUNT', key, '-inf', left)
      from = '(' .. left
    else
      from = format('(%d', at - window)
      in_window = call('ZCOUNT', key, from, '+inf')
    end
    reset_now = newest + window - now
  end
end
remaining_now = limit - in_window
if cost > limit then
  admits, retry = false, window
elseif in_window + cost > limit then
  local entry = call('ZRANGEBYSCORE', key, from, '+inf', 'LIMIT', format('%d', in_window + cost - limit - 1), '1')[1]
  admits, retry = false, logged_at(entry) + window - now
else
  -- an admitting rule has room left, so one more fits as soon as the oldest entry leaves
  local oldest = at
  if in_window > 0 then
    oldest = logged_at(call('ZRANGEBYSCORE', key, from, '+inf', 'LIMIT', '0', '1')[1])
    next_now = oldest + window - now
  end
  admits, remaining_after, reset_after, next_after, delay = true, limit - in_window - cost, at + window - now,
      oldest + window - now, 0
  state, ttl, taken_ms, taken_fraction = at, at + window - now + MARGIN, at, 0
end
--[[ #write ]]
-- sliding-window-log: trim to the window, log cost entries at `state`, members the time and
-- the entry's index among those of that ms, 8 bytes (struct '>I6I2')
if log_foreign then
  call('DEL', key)
end
call('ZREMRANGEBYSCORE', key, '-inf', format('%d', state - window))
local score = format('%d', state)
if not log_index then
  log_index = call('ZCOUNT', key, score, score)
end
local logged = 0
while logged < cost do
  local args = {}
  local batch = cost - logged
  if batch > 1000 then
    batch = 1000
  end
  for j = 1, batch do
    args[2 * j - 1] = score
    args[2 * j] = encode('>I6I2', state, log_index + logged + j - 1)
  end
  call('ZADD', key, unpack(args))
  logged = logged + batch
end
call('PEXPIRE', key, format('%d', ttl))
--[[ #give-back ]]
-- sliding-window-log: remove `cost` of the entries logged at taken_ms, those of that ms with the
-- highest indices, so that its indices stay 0 .. count - 1 (decide.lua numbers new ones from the count)
local score = format('%d', taken_ms)
local count = pcall('ZCOUNT', key, score, score)
if type(count) == 'number' and count > 0 then
  local back = cost
  if back > count then
    back = count
  end
  local removed = 0
  while removed < back do
    local members = {}
    local batch = back - removed
    if batch > 1000 then
      batch = 1000
    end
    for j = 1, batch do
      members[j] = encode('>I6I2', taken_ms, count - removed - j)
    end
    call('ZREM', key, unpack(members))
    removed = removed + batch
  end
end
