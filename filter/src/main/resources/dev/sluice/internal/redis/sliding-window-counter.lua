--[[
sliding-window-counter.lua: dev.sluice.internal.algorithm.SlidingWindowCounter.
KEYS: the client's key. State: string "C<window start ms>:<current>:<previous>", PX = end of the
next window + MARGIN. Counts are weighted in units of ms (count x window) to stay integers.
]]
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
    return false, remaining_now, reset_now, 0, 0, 0, window
  end
  if previous_units + (current + cost) * window > quota then
    local admit_at
    if current + cost <= limit then
      admit_at = start + window - floor_div((limit - current - cost) * window, previous)
    else
      admit_at = start + window + max(0, window - floor_div((limit - cost) * window, current))
    end
    return false, remaining_now, reset_now, 0, 0, 0, admit_at - now
  end
  local remaining_after = floor_div(quota - previous_units - (current + cost) * window, window)
  return true, remaining_now, reset_now, remaining_after, start + 2 * window - now, 0, 0,
      format('C%d:%d:%d', start, current + cost, previous), start + 2 * window - now + MARGIN
end
