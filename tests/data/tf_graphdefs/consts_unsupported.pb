
5
c_int8Const*
dtype0*
valueB"þ
%
out_int8Identityc_int8*
T0
6
c_int16Const*
dtype0*
valueB:¬
'
	out_int16Identityc_int16*
T0
8
c_uint16Const*
dtype0*
valueB:ÿÿ
)

out_uint16Identityc_uint16*
T0"ª