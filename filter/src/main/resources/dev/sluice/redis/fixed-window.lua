--[[
fixed-window.lua: dev.sluice.algorithm.FixedWindow.
KEYS: the client's key. State: string "F<window start ms>:<count>", PX = window end + MARGIN.
Windows are aligned to the epoch; a stored window that starts later than the caller's current
one (a lagging clock) is counted against, never replaced.
]]
ALGORITHMS['fixed-window'] = function(key, now, limit, window, burst, max_delay, cost)
  local start = floor_div(now, window) * window
  local count = 0
  local stored_start, stored_count = read_string(key, '^F(%d+):(%d+)$')
  if stored_start then
    stored_start = tonumber(stored_start)
    if stored_start >= start then
      start = stored_start
      count = tonumber(stored_count)
    end
  end
  local ends = start + window
  local reset_now = 0
  if count > 0 then
    reset_now = ends - now
  end
  if cost > limit then
    return false, limit - count, reset_now, 0, 0, 0, window
  end
  if count + cost > limit then
    return false, limit - count, reset_now, 0, 0, 0, ends - now
  end
  return true, limit - count, reset_now, limit - count - cost, ends - now, 0, 0, function()
    redis.call('SET', key, 'F' .. int(start) .. ':' .. int(count + cost), 'PX', int(ends - now + MARGIN))
  end
end
