--[[
give-back.lua: what the giveBack of the dev.sluice.internal.algorithm classes share, a fragment of
decide.lua (modes 3 and 5: a charge only passes its once check here); each algorithm's own part is
its file's section #give-back. Gives back what an admitted request of `cost` took from `key`, as the decision that
admitted it identified the take (taken_ms, taken_fraction), never leaving the state better than
if the request had never happened, whatever was taken since; overwrites the state given back in
place (SETRANGE, which keeps the key's TTL: the state is only ever better, and Redis 5 has no
SET ... KEEPTTL) before the algorithm's fragment evaluates it. A state of another
algorithm or format, or one whose take can no longer be found, gets nothing.

Once only: the take's token is added to the once key (KEYS[base + n + i], a sorted set) scored by the
moment until which the same give-back could come again and change something: a give-back comes
again only as a resend of the same call underneath (a client library's retry, a cluster redirect;
the filter settles each request once), which takes less than a minute, so a minute from now
(ONCE_MS); sooner where the give-back could change nothing any more before that (the take's count
has ended or faded out, its bucket would be full; one window later still for a caller whose clock
lags); a charge (mode 5), which changes the state whenever it comes, the whole minute. A token
already there gives nothing back. The once key expires with its latest token plus MARGIN and its
expired tokens are removed on each give-back, so it holds at most a minute of the client's
give-backs, whatever the window: a rule that gives back most requests (count=404 on a window of an
hour) keeps a minute's tokens, not an hour's.
]]
if algorithm == 7 then
  --[[ concurrency.lua#give-back ]]
else
local ONCE_MS = 60000 -- RateAlgorithm.ONCE_MS: how long a token is kept at most, longer than any resend underneath takes
local void = taken_ms + 1 -- the buckets: full again by then; the windows' counts end at or after taken_ms
if algorithm == 2 or algorithm == 3 then
  void = taken_ms + window -- the counter's previous count, the log's entries: one window more
end
if void < now then
  void = now
end
void = void + window
if mode == 5 or void > now + ONCE_MS then
  void = now + ONCE_MS -- the resends of a minute; a charge changes the state whenever it is applied
end
local once = KEYS[base + n + i]
call('ZREMRANGEBYSCORE', once, '-inf', format('(%d', now))
if call('ZADD', once, 'NX', format('%d', void), string.sub(tokens, 8 * i - 7, 8 * i)) == 0 then
  taken_ms = nil -- given back before: this is the same give-back again
elseif call('PTTL', once) < void - now + MARGIN then
  call('PEXPIRE', once, format('%d', void - now + MARGIN))
end
if not taken_ms or mode == 5 then
  -- once only: nothing to give back; or a charge, which the algorithm's fragment takes (force)
elseif algorithm == 3 then
  --[[ sliding-window-log.lua#give-back ]]
else
  local stored = pcall('GET', key)
  if algorithm == 1 or algorithm == 0 then
    --[[ fixed-window.lua#give-back ]]
  elseif algorithm == 2 then
    --[[ sliding-window-counter.lua#give-back ]]
  elseif algorithm == 4 then
    --[[ token-bucket.lua#give-back ]]
  else
    -- leaky-bucket, gcra: one state format, one give-back
    --[[ gcra.lua#give-back ]]
  end
end
end
