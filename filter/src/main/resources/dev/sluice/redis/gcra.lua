--[[
gcra.lua: dev.sluice.algorithm.Gcra.
KEYS: the client's key. State: string "G<TAT ms>:<remainder>" (the theoretical arrival time is
ms + remainder / limit), PX = time until the TAT + MARGIN. The emission interval window / limit
is exactly `window` units of ms x limit; the same answers as the token bucket.
]]
ALGORITHMS['gcra'] = function(key, now, limit, window, burst, max_delay, cost)
  local cap = burst * window
  local ahead = 0
  local ms, remainder = read_string(key, '^G(%d+):(%d+)$')
  if ms then
    ahead = lead(tonumber(ms), tonumber(remainder), now, limit, ceil_div(cap, limit) + window)
  end
  local remaining_now = floor_div(cap - ahead, window)
  local reset_now = ceil_div(ahead, limit)
  if cost > burst then
    return false, remaining_now, reset_now, 0, 0, 0, window
  end
  local after = ahead + cost * window
  if after > cap then
    return false, remaining_now, reset_now, 0, 0, 0, ceil_div(after - cap, limit)
  end
  local reset_after = ceil_div(after, limit)
  return true, remaining_now, reset_now, floor_div(cap - after, window), reset_after, 0, 0, function()
    local whole = floor_div(after, limit)
    redis.call('SET', key, 'G' .. int(now + whole) .. ':' .. int(after - whole * limit), 'PX', int(reset_after + MARGIN))
  end
end
