--[[
fixed-window.lua: dev.sluice.internal.algorithm.FixedWindow.
KEYS: the client's key. State: string "F<window start ms>:<count>", PX = window end + MARGIN.
Windows are aligned to the epoch; a stored window that starts later than the caller's current
one (a lagging clock) is counted against, never replaced.
]]
local function fixed_window(key, now, limit, window, cost)
  local start = floor_div(now, window) * window
  local count = 0
  local stored_start, stored_count = read_string(key, '^F(%d+):(%d+)$')
  if stored_start then
    stored_start = stored_start + 0
    if stored_start >= start then
      start = stored_start
      count = stored_count + 0
    end
  end
  local ends = start + window
  local reset_now = 0
  if count > 0 then
    reset_now = ends - now
  end
  if cost > limit then
    return false, limit - count, reset_now, 0, 0, 0, 0, 0, window
  end
  if count + cost > limit then
    return false, limit - count, reset_now, 0, 0, 0, 0, 0, ends - now
  end
  -- nothing comes back before the window ends: next = reset
  return true, limit - count, reset_now, reset_now, limit - count - cost, ends - now, ends - now, 0, 0,
      format('F%d:%d', start, count + cost), ends - now + MARGIN
end
