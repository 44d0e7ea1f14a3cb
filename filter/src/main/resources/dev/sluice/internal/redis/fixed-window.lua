--[[
fixed-window.lua: dev.sluice.internal.algorithm.FixedWindow, a fragment of decide.lua.
Sections: #give-back: the count given back.
State: struct '<Bdd' 1, end ms, count (17 bytes): the count applies until its end, the end of
the window it was counted in; PX = that end + MARGIN. Windows are aligned to the epoch. A
request counted while a count applies adds to it and extends it to the end of its own window, so
a caller whose clock lags counts against the window already started, and a count survives a
change of window (a plan switch, a reload) until it ends.
Calendar windows (algorithm 0, rule.<r>.calendar): the rule ends with '<ddddd' (after a give-back's
taken ms, fraction, given back): the time the
instance computed them around (its estimate of Redis's clock), then four window boundaries b0 < b1
< b2 < b3 (the previous, current and next calendar window), which the instance computes from the
zone's rules; the request's window is the one holding `now`. When `now` is outside [b0, b3) (an
instance's clock far from Redis's, before a reply corrected its estimate), the rule still decides at
`now`: in the count that applies then, else in a window of the instance's current length from `now`
(it ends later than the zone's would: stricter, never looser), so that no count is dropped early nor
written to end far from Redis's clock; RedisEngine sees it from the reply's time and logs it.
]]
local at, window_end = now, nil -- when this rule decides, the end of its window (nil: see above)
local own_length -- a calendar window's length when `now` is outside the boundaries sent
if algorithm == 0 then
  local around, b0, b1, b2, b3 -- around: the instance's estimate of `now`, which the boundaries hold
  around, b0, b1, b2, b3, pos = decode('<ddddd', request, pos)
  if now < b0 or now >= b3 then
    own_length = b2 - b1
  elseif now < b1 then
    window_end = b1
  elseif now < b2 then
    window_end = b2
  else
    window_end = b3
  end
else
  window_end = now - now % window + window
end
local count, ends = 0, nil
local stored = pcall('GET', key)
if stored and #stored == 17 then
  local tag, stored_end, stored_count = decode('<Bdd', stored)
  if tag == 1 and at < stored_end then
    count, ends = stored_count, stored_end
  end
end
remaining_now, reset_now = limit - count, 0
if count > 0 then
  reset_now = ends - at
end
next_now = reset_now -- nothing comes back before the count ends
if cost > limit and not force then
  admits, retry = false, window
elseif count + cost > limit and not force then
  admits, retry = false, ends - at
else
  local after = window_end or ends or at + own_length -- the end of this request's window
  if ends and ends > after then
    after = ends
  end
  after = after - at
  admits, remaining_after, reset_after, next_after, delay = true, limit - count - cost, after, after, 0
  ttl = at + after - now + MARGIN -- the count's end on Redis's clock, also when `at` is the instance's
  if ttl < MARGIN then
    ttl = MARGIN
  end
  local counted = count + cost
  if force and counted > 2251799813685248 then -- FixedWindow.MAX_CHARGED_COUNT, 2^51
    counted = 2251799813685248
  end
  state, taken_ms, taken_fraction = encode('<Bdd', 1, at + after, counted), at + after, 0
  state_answers = algorithm == 1 and 'timed' -- the state, then the time: it can be the reply (not a calendar's)
end
--[[ #give-back ]]
-- fixed-window (0: on a calendar): the count drops by the cost while it ends where the request left it
if stored and #stored == 17 then
  local tag, ends, count = decode('<Bdd', stored)
  if tag == 1 and ends == taken_ms and count > 0 then
    count = count > cost and count - cost or 0
    call('SETRANGE', key, '0', encode('<Bdd', 1, ends, count))
  end
end
