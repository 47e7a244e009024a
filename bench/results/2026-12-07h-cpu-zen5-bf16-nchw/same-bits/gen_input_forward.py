import numpy as np, json, os, sys
rng=np.random.default_rng(11)
root=sys.argv[2]
# (op, n, h, w, ci, co, kh, kw, stride, dil, pad, groups, layout, inf)
confs=[]
for op in ['conv2d_backprop_input','conv2d']:
    for lay in ['NCHW','NHWC']:
        confs += [
         (op,2,14,14,64,64,3,3,1,1,'SAME',1,lay,0),
         (op,2,13,17,32,30,3,3,2,1,'SAME',1,lay,0),
         (op,1,20,22,64,12,3,3,1,2,'SAME',1,lay,0),
         (op,1,15,16,64,20,3,3,2,2,[[1,2],[2,1]],2,lay,0),
         (op,1,9,40,128,64,2,2,1,1,'VALID',1,lay,0),
         (op,1,11,12,96,64,3,3,1,1,'SAME',4,lay,0),
         (op,2,13,13,64,64,3,3,1,1,'SAME',1,lay,1),
         (op,1,10,19,48,32,5,5,2,1,'SAME',2,lay,1),
        ]
for i,(op,n,h,w,ci,co,kh,kw,s,d,pad,g,lay,inf) in enumerate(confs):
    def out(inp,k,st,dl,p0,p1): return (inp+p0+p1-dl*(k-1)-1)//st+1
    if pad=='SAME': oh,ow=-(-h//s),-(-w//s)
    elif pad=='VALID': oh,ow=out(h,kh,s,d,0,0),out(w,kw,s,d,0,0)
    else: oh,ow=out(h,kh,s,d,*pad[0]),out(w,kw,s,d,*pad[1])
    x=rng.standard_normal((n,h,w,ci)).astype(np.float32)
    dy=(rng.standard_normal((n,oh,ow,co))*np.exp(2*rng.standard_normal((n,oh,ow,co)))).astype(np.float32)
    f=rng.standard_normal((kh,kw,ci//g,co)).astype(np.float32)
    if inf:
        x[0,3,w-1,5]=np.inf; dy[0,2,ow-1,7]=np.inf; f[1,1,3,2]=-np.inf; x[0,2,0,1]=np.nan; dy[-1,1,1,3]=np.nan
    if lay=='NCHW': x=x.transpose(0,3,1,2).copy(); dy=dy.transpose(0,3,1,2).copy()
    dname=f'{root}/c{i}'; os.makedirs(dname,exist_ok=True)
    np.save(f'{dname}/x.npy',x); np.save(f'{dname}/dy.npy',dy); np.save(f'{dname}/f.npy',f)
    attrs={"strides":[s,s],"padding":pad,"dilations":[d,d]}
    if op=='conv2d':
        inputs={"x":"x.npy","filter":"f.npy"}
    else:
        inputs={"dy":"dy.npy","filter":"f.npy"}
        attrs["input_shape"]=list(x.shape)
    json.dump({"op":op,"layout":lay,"dtype":"bf16","attrs":attrs,"inputs":inputs,"output":sys.argv[1]},open(f'{dname}/case.json','w'))
print(len(confs))
