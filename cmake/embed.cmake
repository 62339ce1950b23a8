# embed.cmake — write a C file defining `const char NAME[]` with the bytes
# of IN (NUL-terminated): cmake -DIN=... -DOUT=... -DNAME=... -P embed.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* generated from ${IN} by cmake/embed.cmake */\nextern const char ${NAME}[];\nconst char ${NAME}[] = {\n${body}0x00};\n")
