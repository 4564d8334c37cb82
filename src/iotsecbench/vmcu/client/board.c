/* The boards' UARTs and counters. The counter is the primitives' harness's own
 * (../firmware/counter.h: minstret on RV32, the STM32's TIM2 at one tick per instruction on the
 * Cortex-M4); the UART is the one QEMU connects to the host's bridge (-serial chardev:…):
 *
 * - rv32imc, QEMU "virt": UART0 is an NS16550A at 0x10000000 (byte registers). Its 16-byte
 *   FIFO is switched on, so QEMU can hand over up to 14 bytes per arrival.
 * - cortex-m4, QEMU "netduinoplus2" (STM32F405): USART1 at 0x40011000, one byte at a time.
 *
 * Polling, never an interrupt or WFI: under -icount a sleeping core's virtual time follows the
 * host's real time, which would make the M4's TIM2 count wall time; a poll loop is counted
 * instruction by instruction, in the ledger's wait bucket. */
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
#else
#error "no UART for this target"
#endif

uint32_t counter_now(void) { return counter_read(); }

void board_start(void)
{
    counter_start();
    uart_start();
}
