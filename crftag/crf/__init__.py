"""The linear-chain CRF: pure tensor math (forward algorithm, Viterbi, forward-backward,
n-best, constrained partitions) and its compiled kernels. Imports nothing else of crftag."""
