/* The virtual-MCU harness: reads requests from the host file vmcu-in.bin over semihosting, runs
 * each once between two reads of the instruction counter, and writes the answers to
 * vmcu-out.bin. Formats (little-endian; vmcu/run.py is the other side):
 *
 *   out header: "VMCU1" | u32 counter overhead | u32 buffer bytes (the most a request's inputs,
 *               and an answer's output, may hold) | u32 operation count | names, NUL-terminated
 *   request:    u16 operation (0xFFFF ends) | u16 input count | (u32 length | bytes) ...
 *   answer:     i32 output length or status | u32 instructions | u32 stack bytes
 *               | u32 heap peak bytes | output bytes
 *
 * Instructions exclude the harness: the count of an empty operation through the same call is
 * subtracted. The stack high-water mark paints the free stack before the call and finds the
 * deepest byte the call changed (a call using less than VM_STACK_MARGIN bytes reports that margin). */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counted_heap.h"
#include "counter.h"
#include "vmcu.h"

#define VM_INPUTS 8
#define VM_BUFFER (24 * 1024)
#define VM_STACK_MARGIN 64
#define VM_PAINT 0xA5A5A5A5u /* painted and scanned a word at a time: 4x fewer emulated steps */
#if defined(__riscv)
#define VM_READ_SP(into) __asm__ volatile("mv %0, sp" : "=r"(into))
#else
#define VM_READ_SP(into) __asm__ volatile("mov %0, sp" : "=r"(into))
#endif

static uint8_t input_buffer[VM_BUFFER];
static uint8_t output_buffer[VM_BUFFER];
extern uint8_t __heap_end[]; /* picolibc.ld: the lowest address of the stack region */

/* -- deterministic randomness (SplitMix64): a benchmark's keys, never a device's ------------ */
static uint64_t random_state = 0x9E3779B97F4A7C15u;

void vm_random(uint8_t *out, size_t len)
{
    while (len > 0) {
        uint64_t z = (random_state += 0x9E3779B97F4A7C15u);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
        z ^= z >> 31;
        for (int i = 0; i < 8 && len > 0; i++, len--)
            *out++ = (uint8_t)(z >> (8 * i));
    }
}

int vm_random_cb(void *context, unsigned char *out, size_t len)
{
    (void)context;
    vm_random(out, len);
    return 0;
}

int vm_random_block(unsigned char *out, unsigned int len)
{
    vm_random(out, len);
    return 0;
}

/* -- measuring one call ---------------------------------------------------------------------- */
static int32_t nothing(const struct vm_blob *in, unsigned n, uint8_t *out, uint32_t cap)
{
    (void)in, (void)n, (void)out, (void)cap;
    return 0;
}

struct measured {
    int32_t status;
    uint32_t instructions, stack, heap;
};

static __attribute__((noinline)) void paint(uint32_t *top)
{
    for (uint32_t *p = (uint32_t *)__heap_end; p < top; p++)
        *(volatile uint32_t *)p = VM_PAINT;
}

static __attribute__((noinline)) struct measured measure(vm_op *run, const struct vm_blob *in,
                                                         unsigned n)
{
    struct measured m;
    uint8_t *sp;
    VM_READ_SP(sp);                        /* where the operation's frames begin */
    /* paint()'s own frame lives above top */
    uint32_t *top = (uint32_t *)((uintptr_t)(sp - VM_STACK_MARGIN) & ~(uintptr_t)3);
    paint(top);
    vm_heap_mark();
    uint32_t start = counter_read();
    m.status = run(in, n, output_buffer, sizeof output_buffer);
    m.instructions = counter_read() - start;
    uint32_t *deepest = (uint32_t *)__heap_end; /* picolibc.ld aligns it */
    while (deepest < top && *deepest == VM_PAINT)
        deepest++;
    m.stack = (uint32_t)(sp - (uint8_t *)deepest); /* to the word: up to 3 bytes more */
    struct vm_heap heap = vm_heap();
    m.heap = (uint32_t)(heap.peak - heap.current);
    return m;
}

/* -- the request loop ------------------------------------------------------------------------ */
static int read_exactly(int fd, void *into, size_t len)
{
    uint8_t *p = into;
    while (len > 0) {
        ssize_t got = read(fd, p, len);
        if (got <= 0)
            return -1;
        p += got, len -= (size_t)got;
    }
    return 0;
}

static void write_u32(int fd, uint32_t value)
{
    uint8_t bytes[4] = {(uint8_t)value, (uint8_t)(value >> 8), (uint8_t)(value >> 16),
                        (uint8_t)(value >> 24)};
    write(fd, bytes, 4);
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(void)
{
    counter_start();
    int in_fd = open("vmcu-in.bin", O_RDONLY);
    int out_fd = open("vmcu-out.bin", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in_fd < 0 || out_fd < 0)
        return 3;
    unsigned count = 0;
    while (vm_ops[count].name != NULL)
        count++;
    uint32_t overhead = measure(nothing, NULL, 0).instructions;
    write(out_fd, "VMCU1", 5);
    write_u32(out_fd, overhead);
    write_u32(out_fd, VM_BUFFER);
    write_u32(out_fd, count);
    for (unsigned i = 0; i < count; i++)
        write(out_fd, vm_ops[i].name, strlen(vm_ops[i].name) + 1);

    for (;;) {
        uint8_t head[4];
        if (read_exactly(in_fd, head, 4) != 0)
            return 4;
        unsigned op = head[0] | head[1] << 8, n = head[2] | head[3] << 8;
        if (op == 0xFFFF)
            break;
        if (op >= count || n > VM_INPUTS)
            return 4;
        struct vm_blob blobs[VM_INPUTS];
        size_t used = 0;
        for (unsigned i = 0; i < n; i++) {
            uint8_t length[4];
            if (read_exactly(in_fd, length, 4) != 0)
                return 4;
            uint32_t len = le32(length);
            if (len > sizeof input_buffer - used || read_exactly(in_fd, input_buffer + used, len))
                return 4;
            blobs[i].data = input_buffer + used, blobs[i].len = len;
            used += len;
        }
        struct measured m = measure(vm_ops[op].run, blobs, n);
        uint32_t instructions = m.instructions > overhead ? m.instructions - overhead : 0;
        write_u32(out_fd, (uint32_t)m.status);
        write_u32(out_fd, instructions);
        write_u32(out_fd, m.stack);
        write_u32(out_fd, m.heap);
        if (m.status > 0)
            write(out_fd, output_buffer, (size_t)m.status);
    }
    close(out_fd);
    close(in_fd);
    return 0;
}
