-- Frees the leases of one account's calls that ended in the same window (syncMs) and corrects their TPM
-- charges to the actual token counts (mirrors correctTat in gcra.ts), call by call, in the order they ended;
-- a cancelled call (refused before it went upstream) also gets its request back on both RPM limits.
-- Calls come in runs of one key with the same limits, as in the acquire script.
-- KEYS: account tpm, account conc, account rpm, then per run the key's tpm, conc and rpm.
-- ARGV: now, then per run key tpm limit, account tpm limit, key rpm limit, account rpm limit, the number of
-- calls n, and n times lease id, key delta, account delta, rpm delta (0, or -1 for a cancelled call).
-- Each TAT is read once and written once per script (the calls' corrections are applied in order to a local
-- copy: a TAT at or before now stands for a deleted key, as GET answers after a DEL), and each run's leases go
-- in one ZREM per set, so a window of many calls costs a few commands rather than a few per call.
local P = 60000
local now = tonumber(ARGV[1])
local tats, order = {}, {}
local function correct(key, limit, delta)
  if limit > 0 and delta ~= 0 then
    local tat = tats[key]
    if tat == nil then
      tat = tonumber(redis.call('GET', key) or '0')
      order[#order + 1] = key
    end
    local nt
    if delta > 0 then
      if now > tat then tat = now end
      nt = tat + delta * (P / limit)
    else
      nt = tat + delta * (P / limit)
      if nt < now then nt = now end
    end
    tats[key] = nt
  end
end
-- ZREM of many members, in pieces (unpack is bounded by Lua's stack)
local function zremAll(key, members)
  for i = 1, #members, 1000 do
    redis.call('ZREM', key, unpack(members, i, math.min(i + 999, #members)))
  end
end
local a, kb, freed = 2, 4, 0
local accountLeases = {}
while a <= #ARGV do
  local kTpm, aTpm, kRpm, aRpm = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local n = tonumber(ARGV[a + 4])
  a = a + 5
  local keyLeases = {}
  for j = 1, n do
    local leaseId, rpmDelta = ARGV[a], tonumber(ARGV[a + 3])
    correct(KEYS[kb], kTpm, tonumber(ARGV[a + 1]))
    correct(KEYS[1], aTpm, tonumber(ARGV[a + 2]))
    correct(KEYS[kb + 2], kRpm, rpmDelta)
    correct(KEYS[3], aRpm, rpmDelta)
    keyLeases[#keyLeases + 1] = leaseId
    accountLeases[#accountLeases + 1] = leaseId
    a = a + 4
    freed = freed + 1
  end
  zremAll(KEYS[kb + 1], keyLeases)
  kb = kb + 3
end
zremAll(KEYS[2], accountLeases)
for _, key in ipairs(order) do
  local nt = tats[key]
  if nt > now then
    redis.call('SET', key, string.format('%.17g', nt), 'PX', math.ceil(nt - now) + 1000)
  else
    redis.call('DEL', key)
  end
end
return freed
