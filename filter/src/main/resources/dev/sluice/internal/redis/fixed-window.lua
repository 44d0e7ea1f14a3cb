--[[
fixed-window.lua: dev.sluice.internal.algorithm.FixedWindow, a fragment of decide.lua.
State: struct '<Bdd' 1, window start ms, count (17 bytes); PX = window end + MARGIN.
Windows are aligned to the epoch; a stored window that starts later than the caller's current
one (a lagging clock) is counted against, never replaced.
]]
local start = now - now % window
local count = 0
local stored = pcall('GET', key)
if stored and #stored == 17 then
  local tag, stored_start, stored_count = decode('<Bdd', stored)
  if tag == 1 and stored_start >= start then
    start, count = stored_start, stored_count
  end
end
local left = start + window - now -- until the window ends
remaining_now, reset_now = limit - count, 0
if count > 0 then
  reset_now = left
end
next_now = reset_now -- nothing comes back before the window ends
if cost > limit then
  admits, retry = false, window
elseif count + cost > limit then
  admits, retry = false, left
else
  admits, remaining_after, reset_after, next_after, delay = true, limit - count - cost, left, left, 0
  state, ttl = encode('<Bdd', 1, start, count + cost), left + MARGIN
end
