--[[
gcra.lua: dev.sluice.internal.algorithm.Gcra.
KEYS: the client's key. State: string "G<TAT ms>:<remainder>" (the theoretical arrival time is
ms + remainder / limit), PX = time until the TAT + MARGIN. The emission interval window / limit
is exactly `window` units of ms x limit; the same answers as the token bucket.
]]
-- The time until a lead of `ahead` units has fallen enough for one more whole token; 0 when
-- nothing is ahead (Gcra.next).
local function gcra_next(ahead, cap, window, limit)
  if ahead <= 0 then
    return 0
  end
  local whole = max(0, floor_div(cap - ahead, window)) + 1
  return ceil_div(ahead - (cap - whole * window), limit)
end

local function gcra(key, now, limit, window, burst, cost)
  local cap = burst * window
  local ahead = 0
  local ms, remainder = read_string(key, '^G(%d+):(%d+)$')
  if ms then
    ahead = lead(ms + 0, remainder + 0, now, limit, ceil_div(cap, limit) + window)
  end
  local remaining_now = floor_div(cap - ahead, window)
  local reset_now = ceil_div(ahead, limit)
  if cost > burst then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, window
  end
  local after = ahead + cost * window
  if after > cap then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, ceil_div(after - cap, limit)
  end
  local reset_after = ceil_div(after, limit)
  local whole = floor_div(after, limit)
  return true, remaining_now, reset_now, gcra_next(ahead, cap, window, limit), floor_div(cap - after, window), reset_after,
      gcra_next(after, cap, window, limit), 0, 0, format('G%d:%d', now + whole, after - whole * limit), reset_after + MARGIN
end
