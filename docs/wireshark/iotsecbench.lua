-- iotsecbench.lua: a Wireshark dissector for iotsecbench's payload schemes (wire format
-- version 1, docs/wire-format.md), for the MQTT PUBLISH messages on a run's data topic
-- (iotsb/<12 hex digits>/data).
--
-- It shows each sealed message's header (version, scheme id, sequence number), the nonce
-- the receiver builds from it, the IV, ciphertext and tag; and, given the session keys (the
-- IOTSB_SESSION_KEYS lines of a key log), the plaintext — the application message
-- seq (8) | t_created_ns (8) | filler — once its tag verified under one of the sessions.
--
-- Keys come from the first packet's comment of an `iotsecbench run --capture` file (the run
-- puts its session keys there) and from the key log file named in Preferences > Protocols >
-- IOTSB (`-o iotsb.keylog:FILE` for tshark; `run --keylog FILE` writes one).
--
-- Use:  wireshark -X lua_script:docs/wireshark/iotsecbench.lua capture.pcapng
--       tshark -X lua_script:docs/wireshark/iotsecbench.lua -r capture.pcapng \
--              -d tcp.port==PORT,mqtt -Y iotsb -T fields -e iotsb.seq -e iotsb.plaintext
-- (or copy it into ~/.local/lib/wireshark/plugins/). The run's port is in the capture's
-- comment (Statistics > Capture File Properties) and in the run's record.
--
-- Decrypts (pure Lua 5.2, no library): aes128-cbc (1, no tag: a valid padding is all it
-- can check), aes128/256-gcm (2, 3), aes128/256-ccm8 (4, 5), aes128/256-ctr-hmac (8, 9, and
-- the same bytes as 12, 29, 30), aes128/256-cbc-hmac (10, 11) and chacha20-poly1305 (13).
-- The other ciphers (EAX, XChaCha20, XSalsa20, Salsa20-BLAKE2b, Ascon, SPECK, SIMON) are
-- shown, not decrypted: tests/independent_decrypt.py or your own program from
-- docs/wire-format.md decrypts them.
--
-- Checked against the Python schemes by tests/integration/test_capture_dissector.py.

local band, bor, bxor = bit32.band, bit32.bor, bit32.bxor
local lshift, rshift, lrotate, rrotate = bit32.lshift, bit32.rshift, bit32.lrotate, bit32.rrotate

------------------------------------------------------------------------------------------------
-- Bytes: Lua strings on the outside, 0-indexed tables of 0..255 inside the ciphers.

local function to_table(text)
    local out = {}
    for i = 1, #text do out[i - 1] = text:byte(i) end
    return out
end

local function to_string(bytes, first, count)
    local parts = {}
    for i = first, first + count - 1 do parts[#parts + 1] = string.char(bytes[i]) end
    return table.concat(parts)
end

local function from_hex(hex)
    return (hex:gsub("%x%x", function(pair) return string.char(tonumber(pair, 16)) end))
end

local function xor_strings(a, b)
    local parts = {}
    for i = 1, math.min(#a, #b) do parts[i] = string.char(bxor(a:byte(i), b:byte(i))) end
    return table.concat(parts)
end

local function equal_constant_time(a, b)
    if #a ~= #b then return false end
    local difference = 0
    for i = 1, #a do difference = bor(difference, bxor(a:byte(i), b:byte(i))) end
    return difference == 0
end

------------------------------------------------------------------------------------------------
-- AES (FIPS 197): the S-box computed from GF(2^8) inverses, encryption and decryption.

local function xtime(a)
    a = a * 2
    if a >= 256 then a = bxor(a, 0x11b) end
    return a
end

local EXP, LOG, SBOX, INVERSE_SBOX = {}, {}, {}, {}
do
    local x = 1
    for i = 0, 254 do
        EXP[i], LOG[x] = x, i
        x = bxor(x, xtime(x)) -- times 3, a generator of GF(2^8)*
    end
    local function rotate8(value, shift)
        return band(bor(lshift(value, shift), rshift(value, 8 - shift)), 0xff)
    end
    for a = 0, 255 do
        local inverse = a == 0 and 0 or EXP[(255 - LOG[a]) % 255]
        local s = bxor(inverse, rotate8(inverse, 1), rotate8(inverse, 2), rotate8(inverse, 3),
                       rotate8(inverse, 4), 0x63)
        SBOX[a], INVERSE_SBOX[s] = s, a
    end
end

local function gf_multiply(a, b)
    if a == 0 or b == 0 then return 0 end
    return EXP[(LOG[a] + LOG[b]) % 255]
end

local function aes_key(key)
    local words, rounds = #key / 4, #key / 4 + 6
    local w = to_table(key)
    local rcon = 1
    for i = words, 4 * (rounds + 1) - 1 do
        local t0, t1, t2, t3 = w[4 * i - 4], w[4 * i - 3], w[4 * i - 2], w[4 * i - 1]
        if i % words == 0 then
            t0, t1, t2, t3 = bxor(SBOX[t1], rcon), SBOX[t2], SBOX[t3], SBOX[t0]
            rcon = xtime(rcon)
        elseif words > 6 and i % words == 4 then
            t0, t1, t2, t3 = SBOX[t0], SBOX[t1], SBOX[t2], SBOX[t3]
        end
        local back = 4 * (i - words)
        w[4 * i], w[4 * i + 1] = bxor(w[back], t0), bxor(w[back + 1], t1)
        w[4 * i + 2], w[4 * i + 3] = bxor(w[back + 2], t2), bxor(w[back + 3], t3)
    end
    return { w = w, rounds = rounds }
end

local function aes_encrypt(key, block) -- block: 16-byte string
    local w, s = key.w, to_table(block)
    for i = 0, 15 do s[i] = bxor(s[i], w[i]) end
    for round = 1, key.rounds do
        local t = {}
        for c = 0, 3 do
            for r = 0, 3 do t[r + 4 * c] = SBOX[s[r + 4 * ((c + r) % 4)]] end
        end
        if round < key.rounds then
            for c = 0, 12, 4 do
                local a0, a1, a2, a3 = t[c], t[c + 1], t[c + 2], t[c + 3]
                local all = bxor(a0, a1, a2, a3)
                t[c] = bxor(a0, all, xtime(bxor(a0, a1)))
                t[c + 1] = bxor(a1, all, xtime(bxor(a1, a2)))
                t[c + 2] = bxor(a2, all, xtime(bxor(a2, a3)))
                t[c + 3] = bxor(a3, all, xtime(bxor(a3, a0)))
            end
        end
        for i = 0, 15 do s[i] = bxor(t[i], w[16 * round + i]) end
    end
    return to_string(s, 0, 16)
end

local function aes_decrypt(key, block)
    local w, s = key.w, to_table(block)
    for i = 0, 15 do s[i] = bxor(s[i], w[16 * key.rounds + i]) end
    for round = key.rounds - 1, 0, -1 do
        local t = {}
        for c = 0, 3 do
            for r = 0, 3 do t[r + 4 * ((c + r) % 4)] = INVERSE_SBOX[s[r + 4 * c]] end
        end
        for i = 0, 15 do t[i] = bxor(t[i], w[16 * round + i]) end
        if round > 0 then
            for c = 0, 12, 4 do
                local a0, a1, a2, a3 = t[c], t[c + 1], t[c + 2], t[c + 3]
                local m = gf_multiply
                t[c] = bxor(m(a0, 14), m(a1, 11), m(a2, 13), m(a3, 9))
                t[c + 1] = bxor(m(a0, 9), m(a1, 14), m(a2, 11), m(a3, 13))
                t[c + 2] = bxor(m(a0, 13), m(a1, 9), m(a2, 14), m(a3, 11))
                t[c + 3] = bxor(m(a0, 11), m(a1, 13), m(a2, 9), m(a3, 14))
            end
        end
        s = t
    end
    return to_string(s, 0, 16)
end

local function increment_block(block) -- the whole 128-bit block, big-endian (SP 800-38A)
    local bytes = to_table(block)
    for i = 15, 0, -1 do
        bytes[i] = (bytes[i] + 1) % 256
        if bytes[i] ~= 0 then break end
    end
    return to_string(bytes, 0, 16)
end

local function aes_ctr(key, counter, data)
    local parts = {}
    for offset = 1, #data, 16 do
        local chunk = data:sub(offset, offset + 15)
        parts[#parts + 1] = xor_strings(chunk, aes_encrypt(key, counter))
        counter = increment_block(counter)
    end
    return table.concat(parts)
end

local function cbc_decrypt(key, iv, data) -- nil unless whole blocks with a valid PKCS#7 pad
    if #data == 0 or #data % 16 ~= 0 then return nil end
    local parts, previous = {}, iv
    for offset = 1, #data, 16 do
        local block = data:sub(offset, offset + 15)
        parts[#parts + 1] = xor_strings(aes_decrypt(key, block), previous)
        previous = block
    end
    local plain = table.concat(parts)
    local pad = plain:byte(#plain)
    if pad < 1 or pad > 16 then return nil end
    for i = #plain - pad + 1, #plain do
        if plain:byte(i) ~= pad then return nil end
    end
    return plain:sub(1, #plain - pad)
end

------------------------------------------------------------------------------------------------
-- GCM (NIST SP 800-38D): GHASH by the bitwise algorithm of §6.3.

local function gf128_multiply(x, y) -- 16-byte strings
    local z, v = {}, to_table(y)
    for i = 0, 15 do z[i] = 0 end
    for i = 0, 127 do
        local byte = x:byte(1 + math.floor(i / 8))
        if band(byte, rshift(0x80, i % 8)) ~= 0 then
            for j = 0, 15 do z[j] = bxor(z[j], v[j]) end
        end
        local carry = band(v[15], 1)
        for j = 15, 1, -1 do v[j] = bor(rshift(v[j], 1), lshift(band(v[j - 1], 1), 7)) end
        v[0] = rshift(v[0], 1)
        if carry == 1 then v[0] = bxor(v[0], 0xe1) end
    end
    return to_string(z, 0, 16)
end

local function zero_pad(data, size)
    local remainder = #data % size
    return remainder == 0 and data or data .. string.rep("\0", size - remainder)
end

local function be_bytes(value, count)
    local parts = {}
    for i = count - 1, 0, -1 do
        parts[#parts + 1] = string.char(math.floor(value / 2 ^ (8 * i)) % 256)
    end
    return table.concat(parts)
end

local function le_bytes(value, count)
    return be_bytes(value, count):reverse()
end

local function ghash(h, aad, ciphertext)
    local input = zero_pad(aad, 16) .. zero_pad(ciphertext, 16)
        .. be_bytes(8 * #aad, 8) .. be_bytes(8 * #ciphertext, 8)
    local y = string.rep("\0", 16)
    for offset = 1, #input, 16 do
        y = gf128_multiply(xor_strings(y, input:sub(offset, offset + 15)), h)
    end
    return y
end

local function gcm_open(key_bytes, nonce, aad, body) -- nonce: 12 bytes; body: c || tag (16)
    if #body < 16 then return nil end
    local key = aes_key(key_bytes)
    local ciphertext, tag = body:sub(1, #body - 16), body:sub(#body - 15)
    local j0 = nonce .. "\0\0\0\1"
    local h = aes_encrypt(key, string.rep("\0", 16))
    local expected = xor_strings(aes_encrypt(key, j0), ghash(h, aad, ciphertext))
    if not equal_constant_time(expected, tag) then return nil end
    return aes_ctr(key, increment_block(j0), ciphertext)
end

------------------------------------------------------------------------------------------------
-- CCM with an 8-byte tag and an 11-byte nonce (NIST SP 800-38C, RFC 3610: L = 4).

local function ccm8_open(key_bytes, nonce, aad, body)
    if #body < 8 then return nil end
    local key = aes_key(key_bytes)
    local ciphertext, tag = body:sub(1, #body - 8), body:sub(#body - 7)
    local plaintext = aes_ctr(key, "\3" .. nonce .. "\0\0\0\1", ciphertext)
    local flags = 0x40 + 8 * ((8 - 2) / 2) + (4 - 1)
    local blocks = string.char(flags) .. nonce .. be_bytes(#plaintext, 4)
        .. zero_pad(be_bytes(#aad, 2) .. aad, 16) .. zero_pad(plaintext, 16)
    local x = string.rep("\0", 16)
    for offset = 1, #blocks, 16 do
        x = aes_encrypt(key, xor_strings(x, blocks:sub(offset, offset + 15)))
    end
    local s0 = aes_encrypt(key, "\3" .. nonce .. "\0\0\0\0")
    if not equal_constant_time(xor_strings(x:sub(1, 8), s0:sub(1, 8)), tag) then return nil end
    return plaintext
end

------------------------------------------------------------------------------------------------
-- SHA-256 (FIPS 180-4) and HMAC (RFC 2104).

local K256 = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

local function add32(...)
    local sum = 0
    for _, value in ipairs({ ... }) do sum = sum + value end
    return sum % 4294967296
end

local function sha256(message)
    local h = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 }
    local padded = message .. "\128" .. string.rep("\0", (55 - #message) % 64)
        .. be_bytes(8 * #message, 8)
    for offset = 1, #padded, 64 do
        local w = {}
        for i = 0, 15 do
            local a, b, c, d = padded:byte(offset + 4 * i, offset + 4 * i + 3)
            w[i] = ((a * 256 + b) * 256 + c) * 256 + d
        end
        for i = 16, 63 do
            local s0 = bxor(rrotate(w[i - 15], 7), rrotate(w[i - 15], 18), rshift(w[i - 15], 3))
            local s1 = bxor(rrotate(w[i - 2], 17), rrotate(w[i - 2], 19), rshift(w[i - 2], 10))
            w[i] = add32(w[i - 16], s0, w[i - 7], s1)
        end
        local a, b, c, d, e, f, g, hh = h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]
        for i = 0, 63 do
            local s1 = bxor(rrotate(e, 6), rrotate(e, 11), rrotate(e, 25))
            local choice = bxor(band(e, f), band(bit32.bnot(e), g))
            local t1 = add32(hh, s1, choice, K256[i + 1], w[i])
            local s0 = bxor(rrotate(a, 2), rrotate(a, 13), rrotate(a, 22))
            local majority = bxor(band(a, b), band(a, c), band(b, c))
            local t2 = add32(s0, majority)
            hh, g, f, e, d, c, b, a = g, f, e, add32(d, t1), c, b, a, add32(t1, t2)
        end
        h[1], h[2], h[3], h[4] = add32(h[1], a), add32(h[2], b), add32(h[3], c), add32(h[4], d)
        h[5], h[6], h[7], h[8] = add32(h[5], e), add32(h[6], f), add32(h[7], g), add32(h[8], hh)
    end
    local parts = {}
    for i = 1, 8 do parts[i] = be_bytes(h[i], 4) end
    return table.concat(parts)
end

local function hmac_sha256(key, message)
    if #key > 64 then key = sha256(key) end
    key = key .. string.rep("\0", 64 - #key)
    local inner = xor_strings(key, string.rep("\54", 64))
    local outer = xor_strings(key, string.rep("\92", 64))
    return sha256(outer .. sha256(inner .. message))
end

------------------------------------------------------------------------------------------------
-- ChaCha20-Poly1305 (RFC 8439).

local function chacha20_block(key, counter, nonce) -- key 32, nonce 12 bytes → 64 bytes
    local function words(text)
        local out = {}
        for i = 1, #text, 4 do
            local a, b, c, d = text:byte(i, i + 3)
            out[#out + 1] = ((d * 256 + c) * 256 + b) * 256 + a
        end
        return out
    end
    local k, n = words(key), words(nonce)
    local state = { 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574,
                    k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], counter, n[1], n[2], n[3] }
    local x = {}
    for i = 1, 16 do x[i] = state[i] end
    local function quarter(a, b, c, d)
        x[a] = add32(x[a], x[b]); x[d] = lrotate(bxor(x[d], x[a]), 16)
        x[c] = add32(x[c], x[d]); x[b] = lrotate(bxor(x[b], x[c]), 12)
        x[a] = add32(x[a], x[b]); x[d] = lrotate(bxor(x[d], x[a]), 8)
        x[c] = add32(x[c], x[d]); x[b] = lrotate(bxor(x[b], x[c]), 7)
    end
    for _ = 1, 10 do
        quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15); quarter(4, 8, 12, 16)
        quarter(1, 6, 11, 16); quarter(2, 7, 12, 13); quarter(3, 8, 9, 14); quarter(4, 5, 10, 15)
    end
    local parts = {}
    for i = 1, 16 do parts[i] = le_bytes(add32(x[i], state[i]), 4) end
    return table.concat(parts)
end

-- Poly1305 over little-endian numbers in 8-bit limbs (exact in Lua's doubles).
local function limbs(text, extra)
    local out = {}
    for i = 1, #text do out[i - 1] = text:byte(i) end
    if extra then out[#text] = extra end
    return out
end

local function normalise(number)
    local carry, i = 0, 0
    while number[i] ~= nil or carry > 0 do
        local value = (number[i] or 0) + carry
        number[i] = value % 256
        carry = math.floor(value / 256)
        i = i + 1
    end
    return number
end

local function add_numbers(a, b)
    local out = {}
    for i = 0, math.max(#a, #b) do out[i] = (a[i] or 0) + (b[i] or 0) end
    return normalise(out)
end

local function reduce_p1305(number) -- mod 2^130 - 5, partially: below 2^131
    while true do
        local high = {}
        for i = 16, #number do
            local low_bits = math.floor(number[i] / 4)
            local next_bits = (number[i + 1] or 0) % 4
            high[i - 16] = low_bits + next_bits * 64
        end
        local zero = true
        for _, value in pairs(high) do if value ~= 0 then zero = false end end
        if zero then return number end
        local low = {}
        for i = 0, 15 do low[i] = number[i] or 0 end
        low[16] = (number[16] or 0) % 4
        for i = 0, #high do high[i] = high[i] * 5 end
        number = add_numbers(low, normalise(high))
    end
end

local function poly1305(key, message)
    local r = limbs(key:sub(1, 16))
    for _, i in ipairs({ 3, 7, 11, 15 }) do r[i] = band(r[i], 15) end
    for _, i in ipairs({ 4, 8, 12 }) do r[i] = band(r[i], 252) end
    local h = { [0] = 0 }
    for offset = 1, #message, 16 do
        local block = message:sub(offset, offset + 15)
        h = add_numbers(h, limbs(block, 1))
        local product = {}
        for i = 0, #h do
            for j = 0, 15 do product[i + j] = (product[i + j] or 0) + h[i] * r[j] end
        end
        h = reduce_p1305(normalise(product))
    end
    -- fully reduce: h - p = h + 5 - 2^130 when that is not negative
    local candidate = add_numbers(h, { [0] = 5 })
    if (candidate[16] or 0) >= 4 then
        candidate[16] = candidate[16] - 4
        for i = 17, #candidate do candidate[i] = nil end
        h = candidate
    end
    local tag = add_numbers(h, limbs(key:sub(17, 32)))
    return to_string(tag, 0, 16)
end

local function chacha20_poly1305_open(key, nonce, aad, body)
    if #body < 16 then return nil end
    local ciphertext, tag = body:sub(1, #body - 16), body:sub(#body - 15)
    local one_time_key = chacha20_block(key, 0, nonce):sub(1, 32)
    local mac_input = zero_pad(aad, 16) .. zero_pad(ciphertext, 16)
        .. le_bytes(#aad, 8) .. le_bytes(#ciphertext, 8)
    if not equal_constant_time(poly1305(one_time_key, mac_input), tag) then return nil end
    local parts = {}
    for offset = 1, #ciphertext, 64 do
        local stream = chacha20_block(key, 1 + (offset - 1) / 64, nonce)
        parts[#parts + 1] = xor_strings(ciphertext:sub(offset, offset + 63), stream)
    end
    return table.concat(parts)
end

------------------------------------------------------------------------------------------------
-- The wire format: each scheme id's layout (docs/wire-format.md) and how to open it.

local HEADER = 10 -- version (1) | scheme_id (1) | seq (8)

-- name, layout: "cbc" (id 1: no seq), "aead" (nonce = prefix || seq, tag at the end),
-- "xchacha" (24-byte random nonce sent), "secretbox" (tag first), "etm-ctr", "etm-cbc";
-- tag bytes; the nonce length; open(keys, nonce, aad, body, message parts) or nil.
local CIPHERS = {
    [1] = { name = "aes128-cbc", layout = "cbc", tag = 0 },
    [2] = { name = "aes128-gcm", layout = "aead", tag = 16, nonce = 12, open = "gcm" },
    [3] = { name = "aes256-gcm", layout = "aead", tag = 16, nonce = 12, open = "gcm" },
    [4] = { name = "aes128-ccm8", layout = "aead", tag = 8, nonce = 11, open = "ccm8" },
    [5] = { name = "aes256-ccm8", layout = "aead", tag = 8, nonce = 11, open = "ccm8" },
    [6] = { name = "aes128-eax", layout = "aead", tag = 16, nonce = 16 },
    [7] = { name = "aes256-eax", layout = "aead", tag = 16, nonce = 16 },
    [8] = { name = "aes128-ctr-hmac", layout = "etm-ctr", tag = 32, open = "ctr-hmac" },
    [9] = { name = "aes256-ctr-hmac", layout = "etm-ctr", tag = 32, open = "ctr-hmac" },
    [10] = { name = "aes128-cbc-hmac", layout = "etm-cbc", tag = 32, open = "cbc-hmac" },
    [11] = { name = "aes256-cbc-hmac", layout = "etm-cbc", tag = 32, open = "cbc-hmac" },
    [12] = { name = "tinyaes128-ctr-hmac", layout = "etm-ctr", tag = 32, open = "ctr-hmac" },
    [13] = { name = "chacha20-poly1305", layout = "aead", tag = 16, nonce = 12, open = "chacha" },
    [14] = { name = "xchacha20-poly1305", layout = "xchacha", tag = 16 },
    [15] = { name = "xsalsa20-poly1305", layout = "secretbox", tag = 16 },
    [16] = { name = "salsa20-128-blake2b", layout = "etm-ctr", tag = 32 },
    [17] = { name = "salsa20-256-blake2b", layout = "etm-ctr", tag = 32 },
    [18] = { name = "ascon128v12", layout = "aead", tag = 16, nonce = 16 },
    [19] = { name = "ascon128v12-purepy", layout = "aead", tag = 16, nonce = 16 },
    [20] = { name = "speck128-128-ctr-hmac", layout = "etm-ctr", tag = 32 },
    [21] = { name = "speck128-256-ctr-hmac", layout = "etm-ctr", tag = 32 },
    [22] = { name = "simon128-128-ctr-hmac", layout = "etm-ctr", tag = 32 },
    [23] = { name = "simon128-256-ctr-hmac", layout = "etm-ctr", tag = 32 },
    [24] = { name = "speck128-128-ctr-hmac-purepy", layout = "etm-ctr", tag = 32 },
    [25] = { name = "speck128-256-ctr-hmac-purepy", layout = "etm-ctr", tag = 32 },
    [26] = { name = "simon128-128-ctr-hmac-purepy", layout = "etm-ctr", tag = 32 },
    [27] = { name = "simon128-256-ctr-hmac-purepy", layout = "etm-ctr", tag = 32 },
    [28] = { name = "ascon-aead128", layout = "aead", tag = 16, nonce = 16 },
    [29] = { name = "aes128-ctr-hmac-tablefree", layout = "etm-ctr", tag = 32, open = "ctr-hmac" },
    [30] = { name = "aes256-ctr-hmac-tablefree", layout = "etm-ctr", tag = 32, open = "ctr-hmac" },
}

local CIPHER_NAMES = {}
for id, cipher in pairs(CIPHERS) do CIPHER_NAMES[id] = cipher.name end

-- The counter nonce: prefix || seq, seq taking the nonce's remaining bytes (big-endian).
local function counter_nonce(prefix, seq_bytes, size)
    local width = size - #prefix
    if width <= 8 then return prefix .. seq_bytes:sub(9 - width) end
    return prefix .. string.rep("\0", width - 8) .. seq_bytes
end

local OPENERS = {
    gcm = function(keys, parts)
        return gcm_open(keys.enc, parts.nonce, parts.aad, parts.body)
    end,
    ccm8 = function(keys, parts)
        return ccm8_open(keys.enc, parts.nonce, parts.aad, parts.body)
    end,
    chacha = function(keys, parts)
        return chacha20_poly1305_open(keys.enc, parts.nonce, parts.aad, parts.body)
    end,
    ["ctr-hmac"] = function(keys, parts)
        if not equal_constant_time(hmac_sha256(keys.mac, parts.aad .. parts.ciphertext), parts.tag) then
            return nil
        end
        return aes_ctr(aes_key(keys.enc), parts.nonce .. "\0\0\0\0", parts.ciphertext)
    end,
    ["cbc-hmac"] = function(keys, parts)
        local mac_input = parts.aad .. parts.iv .. parts.ciphertext
        if not equal_constant_time(hmac_sha256(keys.mac, mac_input), parts.tag) then
            return nil
        end
        return cbc_decrypt(aes_key(keys.enc), parts.iv, parts.ciphertext)
    end,
    cbc = function(keys, parts) -- no MAC: any key whose padding checks "opens" it
        return cbc_decrypt(aes_key(keys.enc), parts.iv, parts.ciphertext)
    end,
}

------------------------------------------------------------------------------------------------
-- Session keys: IOTSB_SESSION_KEYS <session_id> <e2r|r2e> enc=… mac=… nonce_prefix=… scheme=…

local sessions, seen_lines = {}, {}

local function learn_key_lines(text)
    for line in text:gmatch("[^\r\n]+") do
        local session_id, direction, rest = line:match("^IOTSB_SESSION_KEYS%s+(%x+)%s+(%a%d%a)%s*(.*)$")
        if session_id and not seen_lines[line] then
            seen_lines[line] = true
            local fields = {}
            for name, value in rest:gmatch("(%S+)=(%S*)") do fields[name] = value end
            if fields.enc then
                sessions[#sessions + 1] = {
                    session_id = from_hex(session_id),
                    session_hex = session_id,
                    direction = direction,
                    enc = from_hex(fields.enc),
                    mac = from_hex(fields.mac or ""),
                    prefix = from_hex(fields.nonce_prefix or ""),
                    scheme = fields.scheme or "?",
                }
            end
        end
    end
end

------------------------------------------------------------------------------------------------
-- The protocol: a postdissector over MQTT's PUBLISH messages on a data topic.

local iotsb = Proto("iotsb", "iotsecbench payload scheme")
iotsb.prefs.keylog = Pref.string("Key log file", "",
    "A file holding IOTSB_SESSION_KEYS lines (iotsecbench run --keylog FILE)")

local fields = {
    version = ProtoField.uint8("iotsb.version", "Wire version"),
    scheme_id = ProtoField.uint8("iotsb.scheme_id", "Scheme id (cipher)", base.DEC, CIPHER_NAMES),
    seq = ProtoField.uint64("iotsb.seq", "Sequence number"),
    nonce = ProtoField.string("iotsb.nonce", "Nonce (prefix || seq; the prefix from the key log)"),
    explicit_nonce = ProtoField.bytes("iotsb.explicit_nonce", "Nonce / IV (sent)"),
    ciphertext = ProtoField.bytes("iotsb.ciphertext", "Ciphertext"),
    tag = ProtoField.bytes("iotsb.tag", "Tag"),
    session = ProtoField.string("iotsb.session", "Session (from the key log)"),
    scheme = ProtoField.string("iotsb.scheme", "Scheme (from the key log)"),
    status = ProtoField.string("iotsb.status", "Opened"),
    plaintext = ProtoField.bytes("iotsb.plaintext", "Plaintext"),
    message_seq = ProtoField.uint64("iotsb.message.seq", "Application seq"),
    created = ProtoField.uint64("iotsb.message.t_created_ns", "Created (CLOCK_MONOTONIC, ns)"),
}
iotsb.fields = fields

local topic_field = Field.new("mqtt.topic")
local message_field = Field.new("mqtt.msg")
local comment_field = Field.new("frame.comment")
local loaded_keylog = nil

local function load_preferences()
    local path = iotsb.prefs.keylog
    if path ~= "" and path ~= loaded_keylog then
        local handle = io.open(path, "r")
        if handle then
            learn_key_lines(handle:read("*a"))
            handle:close()
        end
        loaded_keylog = path
    end
end

local function split(message, cipher) -- the message's parts, or nil when too short
    local parts = { header = message:sub(1, HEADER) }
    if cipher.layout == "cbc" then
        if #message < 2 + 16 + 16 then return nil end
        parts.header = message:sub(1, 2)
        parts.iv, parts.ciphertext = message:sub(3, 18), message:sub(19)
        parts.iv_offset, parts.ciphertext_offset = 2, 18
        return parts
    end
    local explicit = cipher.layout == "xchacha" and 24 or cipher.layout == "etm-cbc" and 16 or 0
    if #message < HEADER + explicit + cipher.tag then return nil end
    parts.seq_bytes = message:sub(3, HEADER)
    parts.iv = message:sub(HEADER + 1, HEADER + explicit)
    parts.iv_offset = HEADER
    local body_offset = HEADER + explicit
    if cipher.layout == "secretbox" then
        parts.tag, parts.tag_offset = message:sub(body_offset + 1, body_offset + 16), body_offset
        parts.ciphertext, parts.ciphertext_offset = message:sub(body_offset + 17), body_offset + 16
    else
        parts.ciphertext = message:sub(body_offset + 1, #message - cipher.tag)
        parts.ciphertext_offset = body_offset
        parts.tag, parts.tag_offset = message:sub(#message - cipher.tag + 1), #message - cipher.tag
    end
    parts.body = message:sub(body_offset + 1)
    return parts
end

local function open_with_sessions(cipher, parts)
    local opener = OPENERS[cipher.open or (cipher.layout == "cbc" and "cbc") or ""]
    if opener == nil then return nil end
    for _, keys in ipairs(sessions) do
        if keys.scheme == "?" or keys.scheme:sub(-#cipher.name) == cipher.name
            or cipher.layout == "cbc" then
            parts.aad = parts.header .. keys.session_id .. keys.direction
            if cipher.nonce then
                parts.nonce = counter_nonce(keys.prefix, parts.seq_bytes, cipher.nonce)
            elseif cipher.layout == "etm-ctr" then
                parts.nonce = counter_nonce(keys.prefix, parts.seq_bytes, 12)
            end
            local ok, plaintext = pcall(opener, keys, parts)
            if ok and plaintext ~= nil then return plaintext, keys end
        end
    end
    return nil
end

local function dissect_message(range, tree)
    local message = range:bytes():raw()
    if #message < 2 or message:byte(1) ~= 1 or CIPHERS[message:byte(2)] == nil then return end
    local cipher = CIPHERS[message:byte(2)]
    local subtree = tree:add(iotsb, range, "iotsecbench sealed message, " .. cipher.name)
    subtree:add(fields.version, range(0, 1))
    subtree:add(fields.scheme_id, range(1, 1))
    local parts = split(message, cipher)
    if parts == nil then
        subtree:add_expert_info(PI_MALFORMED, PI_WARN, "too short for " .. cipher.name)
        return
    end
    if parts.seq_bytes then subtree:add(fields.seq, range(2, 8)) end
    if #parts.iv > 0 then subtree:add(fields.explicit_nonce, range(parts.iv_offset, #parts.iv)) end
    if #parts.ciphertext > 0 then
        subtree:add(fields.ciphertext, range(parts.ciphertext_offset, #parts.ciphertext))
    end
    if parts.tag and #parts.tag > 0 then
        subtree:add(fields.tag, range(parts.tag_offset, #parts.tag))
    end
    local plaintext, keys = open_with_sessions(cipher, parts)
    if plaintext == nil then
        local why = OPENERS[cipher.open or (cipher.layout == "cbc" and "cbc") or ""] == nil
            and "this dissector does not decrypt " .. cipher.name
            or (#sessions == 0 and "no session keys (key log preference or the capture's comment)"
                or "no logged session's key opens it")
        subtree:add(fields.status, "no: " .. why)
        return
    end
    if parts.nonce then -- built from the seq on the wire and the logged prefix
        local hex = parts.nonce:gsub(".", function(c) return string.format("%02x", c:byte()) end)
        subtree:add(fields.nonce, range(2, 8), hex):set_generated()
    end
    subtree:add(fields.session, keys.session_hex .. " " .. keys.direction)
    subtree:add(fields.scheme, keys.scheme)
    subtree:add(fields.status, cipher.tag > 0 and "yes: tag verified" or "yes: padding valid (no tag: not authenticated)")
    local plain_tvb = ByteArray.new(plaintext, true):tvb("iotsecbench plaintext")
    local plain_tree = subtree:add(fields.plaintext, plain_tvb())
    if plain_tvb:len() >= 16 then
        plain_tree:add(fields.message_seq, plain_tvb(0, 8))
        plain_tree:add(fields.created, plain_tvb(8, 8))
    end
end

function iotsb.dissector(tvb, pinfo, tree)
    load_preferences()
    for _, comment in ipairs({ comment_field() }) do learn_key_lines(tostring(comment.value)) end
    local messages = { message_field() }
    if #messages == 0 then return end
    local topics = { topic_field() }
    for _, message in ipairs(messages) do
        -- the topic of this PUBLISH ends where its message starts (QoS 0) or two bytes before
        -- (the packet id at QoS 1 and 2)
        local topic = nil
        for _, candidate in ipairs(topics) do
            local ends = candidate.offset + candidate.len
            if ends == message.offset or ends + 2 == message.offset then topic = candidate end
        end
        if topic and tostring(topic.value):match("^iotsb/%x+/data$") then
            dissect_message(message.range, tree)
        end
    end
end

register_postdissector(iotsb, true)
