--[[
fixed-window.lua: dev.sluice.internal.algorithm.FixedWindow, a fragment of decide.lua.
State: struct '<Bdd' 1, end ms, count (17 bytes): the count applies until its end, the end of
the window it was counted in; PX = that end + MARGIN. Windows are aligned to the epoch. A
request counted while a count applies adds to it and extends it to the end of its own window, so
a caller whose clock lags counts against the window already started, and a count survives a
change of window (a plan switch, a reload) until it ends.
]]
local count, ends = 0, nil
local stored = pcall('GET', key)
if stored and #stored == 17 then
  local tag, stored_end, stored_count = decode('<Bdd', stored)
  if tag == 1 and now < stored_end then
    count, ends = stored_count, stored_end
  end
end
remaining_now, reset_now = limit - count, 0
if count > 0 then
  reset_now = ends - now
end
next_now = reset_now -- nothing comes back before the count ends
if cost > limit then
  admits, retry = false, window
elseif count + cost > limit then
  admits, retry = false, ends - now
else
  local after = now - now % window + window -- the end of this request's window
  if ends and ends > after then
    after = ends
  end
  after = after - now
  admits, remaining_after, reset_after, next_after, delay = true, limit - count - cost, after, after, 0
  state, ttl, taken_ms, taken_fraction = encode('<Bdd', 1, now + after, count + cost), after + MARGIN, now + after, 0
end
