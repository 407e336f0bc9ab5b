-- Raises admitted calls' token charges (a larger estimate learnt after admission): each call takes only the
-- difference from its key's and its account's TPM, both or neither, and nothing else (its request and its
-- concurrency lease stay as acquire took them). The calls of one account in a batch (an event-loop turn) are
-- topped up one after the other in arrival order, exactly as separate script calls would. GCRA as in acquire
-- (gcra.ts): a refused call changes nothing and is told the wait until its difference fits.
-- Calls come in runs of one key with the same limits, as in the acquire script.
-- KEYS: per run key rpm, key tpm, account rpm, account tpm (the rpm keys are only read, for the headers).
-- ARGV: per run the four limits (key rpm, key tpm, account rpm, account tpm; 0 when not set), the number of
-- calls n, and n times now, key difference and account difference (each already clamped like acquire's charge).
-- Answers 13 numbers per call, laid out as the acquire script's first 13: status (0 refused, 1 taken), the
-- refusing limit's index (2 key tpm, 5 account tpm), retry, limit and remaining, then remaining and reset of
-- key rpm, key tpm, account rpm, account tpm.
-- Each key is read once and written once per script: the calls go against local copies of the TATs
-- (gcra-state.lua, loaded in front of this script).

local function topUp(kb, now, limits, extra)
  local key = {[1] = KEYS[kb], [2] = KEYS[kb + 1], [4] = KEYS[kb + 2], [5] = KEYS[kb + 3]}
  local rem, reset, newTats = {0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, {}
  local denyRetry, denyIdx, denyLimit, denyRem = 0, 0, 0, 0
  -- what is left of limit i now, for the headers, taking nothing
  local function peek(i)
    if limits[i] > 0 then
      local _, _, _, r, rs = gcra(now, getTat(key[i]), limits[i], 0)
      rem[i], reset[i] = r, rs
    end
  end
  peek(1)
  peek(4)
  for _, i in ipairs({2, 5}) do
    if limits[i] > 0 then
      local ok, nt, retry, r, rs = gcra(now, getTat(key[i]), limits[i], extra[i])
      newTats[i], rem[i], reset[i] = nt, r, rs
      -- a refusal waits at least 1 ms; a difference of 0 is never refused (a TAT overrun by a forced call
      -- past a minute ahead would refuse even that)
      if extra[i] > 0 and not ok and retry > denyRetry then
        denyRetry, denyIdx, denyLimit, denyRem = retry, i, limits[i], r
      end
    end
  end
  if denyIdx > 0 then
    -- nothing taken: the headers say what is left now
    peek(2)
    peek(5)
  else
    for _, i in ipairs({2, 5}) do
      if limits[i] > 0 and extra[i] > 0 then setTat(key[i], newTats[i], now) end
    end
  end
  local status = 1
  if denyIdx > 0 then status = 0 end
  for _, v in ipairs({status, denyIdx, denyRetry, denyLimit, denyRem, rem[1], reset[1], rem[2], reset[2], rem[4], reset[4], rem[5], reset[5]}) do
    out[#out + 1] = v
  end
end

local a, kb = 1, 1
while a <= #ARGV do
  local limits = {[1] = tonumber(ARGV[a]), [2] = tonumber(ARGV[a + 1]), [4] = tonumber(ARGV[a + 2]), [5] = tonumber(ARGV[a + 3])}
  local n = tonumber(ARGV[a + 4])
  a = a + 5
  for _ = 1, n do
    topUp(kb, tonumber(ARGV[a]), limits, {[2] = tonumber(ARGV[a + 1]), [5] = tonumber(ARGV[a + 2])})
    a = a + 3
  end
  kb = kb + 4
end
writeTats()
return out
