--[[
sliding-window-counter.lua: dev.sluice.internal.algorithm.SlidingWindowCounter.
KEYS: the client's key. State: string "C<window start ms>:<current>:<previous>", PX = end of the
next window + MARGIN. Counts are weighted in units of ms (count x window) to stay integers.
]]
-- The first ms at which a request of `cost`, denied now, fits (SlidingWindowCounter.admitAt).
local function counter_admit_at(start, current, previous, limit, window, cost)
  if current + cost <= limit then
    return start + window - floor_div((limit - current - cost) * window, previous)
  end
  return start + window + max(0, window - floor_div((limit - cost) * window, current))
end

-- The time until remaining grows: until one more than it fits; 0 at the full quota.
local function counter_next(start, current, previous, limit, window, remaining, now)
  local more = max(0, remaining) + 1
  if more > limit then
    return 0
  end
  return counter_admit_at(start, current, previous, limit, window, more) - now
end

local function sliding_window_counter(key, now, limit, window, cost)
  local start = floor_div(now, window) * window
  local current, previous = 0, 0
  local stored_start, stored_current, stored_previous = read_string(key, '^C(%d+):(%d+):(%d+)$')
  if stored_start then
    stored_start = stored_start + 0
    if stored_start >= start then
      start = stored_start
      current, previous = stored_current + 0, stored_previous + 0
    elseif stored_start == start - window then
      previous = stored_current + 0
    end
  end
  local quota = limit * window
  local previous_units = previous * (window - (max(now, start) - start))
  local remaining_now = floor_div(quota - previous_units - current * window, window)
  local reset_now = 0
  if current > 0 then
    reset_now = start + 2 * window - now
  elseif previous > 0 then
    reset_now = start + window - now
  end
  if cost > limit then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0, window
  end
  if previous_units + (current + cost) * window > quota then
    return false, remaining_now, reset_now, 0, 0, 0, 0, 0,
        counter_admit_at(start, current, previous, limit, window, cost) - now
  end
  local remaining_after = floor_div(quota - previous_units - (current + cost) * window, window)
  return true, remaining_now, reset_now, counter_next(start, current, previous, limit, window, remaining_now, now),
      remaining_after, start + 2 * window - now,
      counter_next(start, current + cost, previous, limit, window, remaining_after, now), 0, 0,
      format('C%d:%d:%d', start, current + cost, previous), start + 2 * window - now + MARGIN
end
