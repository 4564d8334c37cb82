/* The boards' UARTs and counters. The counter is the primitives' harness's own
 * (../firmware/counter.h: minstret on RV32, the STM32's TIM2 at one tick per instruction on the
 * Cortex-M4); the UART is the one QEMU connects to the host's bridge (-serial chardev:…):
 *
 * - rv32imc, QEMU "virt": UART0 is an NS16550A at 0x10000000 (byte registers). Its 16-byte
 *   FIFO is switched on, so QEMU can hand over up to 14 bytes per arrival.
 * - cortex-m4, QEMU "netduinoplus2" (STM32F405): USART1 at 0x40011000, one byte at a time.
 *
 * Waiting for bytes polls, never an interrupt or WFI: under -icount a sleeping core's virtual
 * time follows the host's real time, which would make the M4's TIM2 count wall time; a poll
 * loop is counted instruction by instruction, in the ledger's wait bucket.
 *
 * Sleeping between messages (board_sleep_ns, the publish role) is WFI with interrupts masked:
 * the timer's pending interrupt wakes the core without a handler running (RISC-V: WFI wakes
 * on mip & mie whatever mstatus.MIE; ARMv7-M: on a pending exception whatever PRIMASK), and
 * the sleep is booked to no bucket (clock.c measures it on the lab's clock).
 *
 * - rv32imc: the CLINT's mtimecmp (0x02004000) against mtime (0x0200BFF8, 10 MHz of virtual
 *   time on "virt").
 * - cortex-m4: SysTick on the processor clock (168 MHz on "netduinoplus2"), at most 90 ms per
 *   sleep (its 24-bit counter); the caller sleeps again until its deadline. */
#include "device.h"

#include "../firmware/counter.h"

#if defined(__riscv)
#define UART_BASE 0x10000000u
#define UART8(offset) (*(volatile uint8_t *)(UART_BASE + (offset)))
enum { RBR = 0, THR = 0, FCR = 2, LSR = 5 };
enum { LSR_DATA_READY = 0x01, LSR_THR_EMPTY = 0x20 };

static void uart_start(void) { UART8(FCR) = 0xC7; /* FIFO on, cleared, trigger at 14 bytes */ }
bool uart_readable(void) { return UART8(LSR) & LSR_DATA_READY; }
uint8_t uart_read(void) { return UART8(RBR); }
void uart_write(uint8_t byte)
{
    while (!(UART8(LSR) & LSR_THR_EMPTY))
        ;
    UART8(THR) = byte;
}

#define CLINT_MTIMECMP 0x02004000u
#define CLINT_MTIME 0x0200BFF8u
#define MMIO32(address) (*(volatile uint32_t *)(address))

static uint64_t mtime(void)
{
    uint32_t high, low;
    do {
        high = MMIO32(CLINT_MTIME + 4);
        low = MMIO32(CLINT_MTIME);
    } while (high != MMIO32(CLINT_MTIME + 4));
    return (uint64_t)high << 32 | low;
}

void board_sleep_ns(uint64_t ns)
{
    uint64_t until = mtime() + (ns + 99) / 100; /* 10 MHz */
    MMIO32(CLINT_MTIMECMP + 4) = 0xFFFFFFFFu;       /* no early match while writing */
    MMIO32(CLINT_MTIMECMP) = (uint32_t)until;
    MMIO32(CLINT_MTIMECMP + 4) = (uint32_t)(until >> 32);
    __asm__ volatile("csrs mie, %0" ::"r"(1u << 7)); /* MTIE; mstatus.MIE stays off */
    while (mtime() < until)
        __asm__ volatile("wfi");
    __asm__ volatile("csrc mie, %0" ::"r"(1u << 7));
    MMIO32(CLINT_MTIMECMP + 4) = 0xFFFFFFFFu;
}
#elif defined(__ARM_ARCH_7EM__)
#define USART1 0x40011000u
#define USART(offset) (*(volatile uint32_t *)(USART1 + (offset)))
enum { SR = 0x00, DR = 0x04, CR1 = 0x0C };
enum { SR_RXNE = 1u << 5, SR_TXE = 1u << 7 };
enum { CR1_UE = 1u << 13, CR1_TE = 1u << 3, CR1_RE = 1u << 2 };

static void uart_start(void) { USART(CR1) = CR1_UE | CR1_TE | CR1_RE; }
bool uart_readable(void) { return USART(SR) & SR_RXNE; }
uint8_t uart_read(void) { return (uint8_t)USART(DR); }
void uart_write(uint8_t byte)
{
    while (!(USART(SR) & SR_TXE))
        ;
    USART(DR) = byte;
}

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t *)0xE000ED04u)
#define CPU_HZ 168000000u
#define SLEEP_MAX_NS 90000000u /* under 2^24 SysTick ticks */

void board_sleep_ns(uint64_t ns)
{
    uint32_t chunk = ns > SLEEP_MAX_NS ? SLEEP_MAX_NS : (uint32_t)ns;
    uint32_t ticks = (uint32_t)((uint64_t)chunk * (CPU_HZ / 1000000u) / 1000u);
    if (ticks < 2)
        return;
    __asm__ volatile("cpsid i" ::: "memory");
    SYST_CSR = 0;
    SYST_RVR = ticks - 1;
    SYST_CVR = 0;
    SYST_CSR = 7; /* enable, interrupt (pending only: PRIMASK is set), processor clock */
    while (!(SYST_CSR & (1u << 16))) /* COUNTFLAG: reading it clears it */
        __asm__ volatile("wfi");
    SYST_CSR = 0;
    SCB_ICSR = 1u << 25; /* PENDSTCLR: a pending SysTick would wake every later WFI */
}
#else
#error "no UART for this target"
#endif

uint32_t counter_now(void) { return counter_read(); }

void board_start(void)
{
    counter_start();
    uart_start();
}
