#include "textflag.h"

// func prefetchWords(base *uint64, idx []uint64)
TEXT ·prefetchWords(SB), NOSPLIT, $0-32
	MOVQ base+0(FP), AX
	MOVQ idx_base+8(FP), SI
	MOVQ idx_len+16(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVQ (SI), DX
	PREFETCHT0 (AX)(DX*8)
	ADDQ $8, SI
	DECQ CX
	JNE loop
done:
	RET
