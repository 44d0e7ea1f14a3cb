--[[
leaky-bucket.lua: dev.sluice.internal.algorithm.LeakyBucket.
KEYS: the client's key. State: string "L<next free slot ms>:<remainder>" (the slot is at
ms + remainder / limit), PX = time until the queue has drained + MARGIN. A slot is `window`
units of ms x limit; max_delay is capped where the burst binds anyway.
]]
-- The cost-1 requests a queue of q units still admits (some delayed).
local function leaky_remaining(q, cap, window, max_delay_units)
  local by_delay = 0
  if q <= max_delay_units then
    by_delay = floor_div(max_delay_units - q, window) + 1
  end
  return min(floor_div(cap - q, window), by_delay)
end

-- The time until the cost-1 requests a queue of q units admits grow as it drains; 0 when no
-- drain makes room for more (LeakyBucket.next).
local function leaky_next(q, cap, window, limit, max_delay_units)
  local r = max(0, leaky_remaining(q, cap, window, max_delay_units))
  local room = min(cap - (r + 1) * window, max_delay_units - r * window)
  if room < 0 then
    return 0
  end
  return ceil_div(q - room, limit)
end

local function leaky_bucket(key, now, limit, window, burst, max_delay, cost)
  local cap = burst * window
  local max_delay_units = min(max_delay, ceil_div(cap, limit)) * limit
  local queued = 0
  local ms, remainder = read_string(key, '^L(%d+):(%d+)$')
  if ms then
    queued = lead(ms + 0, remainder + 0, now, limit, ceil_div(cap, limit) + window)
  end
  local remaining_now = leaky_remaining(queued, cap, window, max_delay_units)
  local reset_now = ceil_div(queued, limit)
  if cost > burst then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, window
  end
  local after = queued + cost * window
  if queued > max_delay_units or after > cap then
    local retry = max(0, ceil_div(after - cap, limit), ceil_div(queued - max_delay_units, limit))
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, retry
  end
  local reset_after = ceil_div(after, limit)
  local whole = floor_div(after, limit)
  return true, remaining_now, reset_now, leaky_next(queued, cap, window, limit, max_delay_units),
      leaky_remaining(after, cap, window, max_delay_units), reset_after, leaky_next(after, cap, window, limit, max_delay_units),
      ceil_div(queued, limit), 0, format('L%d:%d', now + whole, after - whole * limit), reset_after + MARGIN
end
